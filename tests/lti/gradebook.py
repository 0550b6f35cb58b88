"""The test LMS's gradebook: AGS 2.0 line items, scores and results of each context, in memory.

``Grades`` is lti1p3platform's ``AssignmentsGradesService`` (it authenticates each call's bearer token
and shapes each answer) over one context's ``Context``; tests/lti/platform.py routes the AGS URLs to it.
Written here, where the library leaves it to the platform: the store, each route's own scope (the
library's service takes a token with any AGS scope for any call) and the score checks the library
leaves as a TODO (:func:`check_score`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime

from lti1p3platform import exceptions as lti_errors
from lti1p3platform.lineitem import TLineItem
from lti1p3platform.score import ActivityProgress, GradeProgress, TScore, UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, TPage

AGS_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
AGS_LINEITEM_READ = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
AGS_RESULT_READ = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
AGS_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


@dataclass
class Context:
    """One course's gradebook at the platform: line items, results, the score POSTs received."""

    lineitems: dict[str, dict] = field(default_factory=dict)
    results: dict[str, dict[str, dict]] = field(default_factory=dict)
    scores: list[tuple[str, dict]] = field(default_factory=list)
    last_timestamp: dict[tuple[str, str], datetime] = field(default_factory=dict)



class Grades(AssignmentsGradesService):
    """The library's AGS service over one context's in-memory gradebook; each route names its scopes."""

    def __init__(self, request, platform_config, *, context: Context, lineitems_url: str,
                 scopes: list[str], lineitem_url: str | None = None) -> None:
        super().__init__(request, platform_config, lineitems_url, lineitem_url)
        self._context, self._scopes = context, scopes
        self._lineitems_url = lineitems_url.rstrip("/")

    @property
    def allowed_scopes(self) -> list[str]:
        return self._scopes

    def _url(self, line_item_id: str) -> str:
        return f"{self._lineitems_url}/{line_item_id}"

    def _item(self, line_item_id: str) -> dict:
        try:
            return self._context.lineitems[line_item_id]
        except KeyError:
            raise lti_errors.LineItemNotFoundException(line_item_id) from None

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None,
                       resource_id=None, tag=None, **_other) -> TPage:
        items = [item for item in self._context.lineitems.values()
                 if (resource_link_id is None or item.get("resourceLinkId") == resource_link_id)
                 and (resource_id is None or item.get("resourceId") == resource_id)
                 and (tag is None or item.get("tag") == tag)]
        if limit:
            start = (int(page) - 1) * int(limit)
            return {"content": items[start:start + int(limit)], "has_next": start + int(limit) < len(items)}
        return {"content": items, "has_next": False}

    def find_lineitem(self, line_item_id: str) -> TLineItem:
        return self._item(line_item_id)

    def create_lineitem(self, creation_data: TLineItem) -> TLineItem:
        if not isinstance(creation_data, dict) or not creation_data.get("label"):
            raise lti_errors.LtiServiceException("a line item needs a label", 400)
        maximum = creation_data.get("scoreMaximum")
        if not isinstance(maximum, (int, float)) or isinstance(maximum, bool) or maximum <= 0:
            raise lti_errors.LtiServiceException("a line item needs a scoreMaximum above 0", 400)
        line_item_id = str(len(self._context.lineitems) + 1)
        item = {**creation_data, "id": self._url(line_item_id)}
        self._context.lineitems[line_item_id] = item
        self._context.results[line_item_id] = {}
        return item

    def update_lineitem(self, update_data: TLineItem) -> TLineItem:
        line_item_id = update_data["id"]
        item = self._item(line_item_id)
        item.update({**update_data, "id": self._url(line_item_id)})
        return item

    def delete_lineitem(self, line_item_id: str) -> None:
        self._item(line_item_id)
        del self._context.lineitems[line_item_id]
        del self._context.results[line_item_id]

    def update_score(self, line_item_id: str, score: TScore) -> UpdateScoreStatus:
        self._item(line_item_id)
        when = check_score(score)
        user = str(score["userId"])
        last = self._context.last_timestamp.get((line_item_id, user))
        if last is not None and when < last:
            return UpdateScoreStatus.OLD_TIMESTAMP
        self._context.last_timestamp[(line_item_id, user)] = when
        self._context.scores.append((self._url(line_item_id), copy.deepcopy(score)))
        results = self._context.results[line_item_id]
        created = user not in results
        result = {"id": f"{self._url(line_item_id)}/results/{user}", "userId": user,
                  "scoreOf": self._url(line_item_id)}
        if "scoreGiven" in score:
            result.update(resultScore=score["scoreGiven"], resultMaximum=score["scoreMaximum"])
        if score.get("comment"):
            result["comment"] = score["comment"]
        results[user] = result
        return UpdateScoreStatus.CREATED if created else UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id: str, page=1, limit=None, user_id=None, **_other) -> TPage:
        self._item(line_item_id)
        results = [r for u, r in self._context.results[line_item_id].items() if user_id in (None, u)]
        return {"content": results, "has_next": False}


def check_score(score) -> datetime:
    """The score's timestamp, after the checks of AGS 2.0's score media type; a 400 otherwise."""
    def bad(why: str):
        return lti_errors.LtiServiceException(f"score refused: {why}", 400)

    if not isinstance(score, dict):
        raise bad("not a JSON object")
    for key in ("userId", "timestamp", "activityProgress", "gradingProgress"):
        if key not in score:
            raise bad(f"{key} missing")
    if score["activityProgress"] not in {p.value for p in ActivityProgress}:
        raise bad(f"activityProgress {score['activityProgress']!r}")
    if score["gradingProgress"] not in {p.value for p in GradeProgress}:
        raise bad(f"gradingProgress {score['gradingProgress']!r}")
    if "scoreGiven" in score:
        given, maximum = score["scoreGiven"], score.get("scoreMaximum")
        if not isinstance(given, (int, float)) or given < 0:
            raise bad("scoreGiven must be a number, 0 or more")
        if not isinstance(maximum, (int, float)) or maximum <= 0:
            raise bad("scoreGiven needs a scoreMaximum above 0")
    try:
        return datetime.fromisoformat(str(score["timestamp"]).replace("Z", "+00:00"))
    except ValueError:
        raise bad(f"timestamp {score['timestamp']!r} is not ISO 8601") from None
