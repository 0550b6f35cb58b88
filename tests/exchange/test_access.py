"""Who may reach the service is the hub's decision by scopes: a token with the scopes of a user's server
(the ``server`` role, which configure() extends) reaches it, a token without the access scope does not."""

import requests

from course_exchange.hub_config import ACCESS_SCOPE, DEFAULT_SERVER_SCOPES


def test_a_server_token_reaches_the_exchange_and_a_narrower_one_does_not(hub, make_course):
    course = make_course(students=1)
    student = course.students[0]
    url = hub.exchange_url + "api/me"
    server_like = hub.token(student, scopes=[*DEFAULT_SERVER_SCOPES, ACCESS_SCOPE])
    r = requests.get(url, headers={"Authorization": f"token {server_like}"}, timeout=60)
    assert r.status_code == 200 and r.json()["courses"] == {course.id: "student"}, r.text
    narrow = hub.token(student, scopes=["read:users:name!user"])
    r = requests.get(url, headers={"Authorization": f"token {narrow}"}, timeout=60)
    assert r.status_code == 403 and "access:services!service=course-exchange" in r.json()["error"], r.text
