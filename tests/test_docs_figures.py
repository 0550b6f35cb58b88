"""The docs' figures and tables match the tree: the number of bundled sample submissions wherever a page
states it, the README's exercise table (one row per exercise in solutions/, in order) and the number of
lesson notebooks the README names. Counted from the tree, so a new sample, exercise or lesson fails here
until the docs say it too."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples" / "submissions"
# the pages that state figures about the tree (README, docs/, and the demo's docstring that README quotes)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "src/course_grader/samples/demo.py"]
# "all 85 samples", "all 85 bundled samples", "85 bundled samples": a statement about every sample
ALL_SAMPLES = re.compile(r"\ball\s+(\d+)\s+(?:bundled\s+)?samples\b|\b(\d+)\s+bundled\s+samples\b")
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "eleven": 11, "twelve": 12}


def sample_count() -> int:
    # expected.json names every sample; the files are not all committed (bad-huge-50mb is made when a test
    # needs it and git-ignored), so counting files gave one number in a fresh clone and another after a run
    return len(json.loads((SAMPLES / "expected.json").read_text(encoding="utf-8")))


def exercises() -> list[str]:
    return sorted(p.stem for p in (ROOT / "solutions").glob("ex[0-9][0-9]_*.ipynb"))


def test_every_stated_sample_count_is_the_trees():
    count = sample_count()
    assert count > 0
    stated = [(page.relative_to(ROOT), int(m.group(1) or m.group(2)))
              for page in PAGES if page.exists() for m in ALL_SAMPLES.finditer(page.read_text())]
    assert stated, "no page states the number of samples any more: drop this test or the pattern"
    assert [s for s in stated if s[1] != count] == [], f"the tree has {count} samples"


def test_the_readme_exercise_table_lists_every_exercise_in_order():
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| (ex\d\d_\w+) \|", readme, re.MULTILINE)
    assert rows == exercises(), "README's exercise table and solutions/ differ"


def test_the_readme_names_the_number_of_lessons():
    readme = (ROOT / "README.md").read_text()
    lessons = len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    stated = re.findall(r"\b(\w+) lesson notebooks\b", readme)
    named = [WORDS.get(w.lower(), int(w) if w.isdigit() else None) for w in stated]
    named = [n for n in named if n is not None]
    assert named and set(named) == {lessons}, (stated, lessons)


def lesson_links() -> dict[str, set[str]]:
    """``{lesson notebook: exercises its markdown links to}``."""
    found = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        found[path.name] = set(re.findall(r"\]\(\.\./exercises/(ex\d\d_\w+)\.ipynb\)", text))
    return found


def test_every_exercise_is_linked_from_a_lesson_and_from_lesson_01s_table():
    """A student finds each exercise from the lesson it follows and from the course's table of contents."""
    links = lesson_links()
    from_lessons = set().union(*(names for lesson, names in links.items() if not lesson.startswith("01_")))
    assert [e for e in exercises() if e not in from_lessons] == [], "exercises no lesson after 01 links to"
    lesson_01 = json.loads((ROOT / "notebooks" / "01_lesson_goals.ipynb").read_text(encoding="utf-8"))["cells"]
    table = next("".join(c["source"]) for c in lesson_01 if "".join(c["source"]).startswith("## The lessons"))
    listed = set(re.findall(r"\]\(\.\./exercises/(ex\d\d_\w+)\.ipynb\)", table))
    assert [e for e in exercises() if e not in listed] == [], "exercises missing from lesson 01's table"
    assert listed <= set(exercises()) and set().union(*links.values()) <= set(exercises()), "a link to no exercise"


def test_the_authoring_guide_names_every_field_of_the_records():
    """docs/authoring.md documents the test API's records field by field (a new field fails here until it does)."""
    import dataclasses
    import inspect

    from compile_course import testing
    from compile_course.measurement import records

    guide = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
    wanted = {f"`.{f.name}`" for record in (records.Run, records.CallResult, records.Break,
                                             records.Timing) for f in dataclasses.fields(record)}
    wanted |= {f'"{key}"' for key in records.COMPILE_STATS}                      # CallResult.compiled
    wanted |= {'`"args"`', '`"kwargs"`', '`"grad_enabled"`'}                     # a spied call (read_spy_calls)
    wanted |= {'"dtype"', '"shape"', '"requires_grad"', '"marks"'}               # a spied tensor
    wanted |= {"`dynamic`", "`maybe_dynamic`", "`static`", "`unbacked`"}         # its marks (tensor_marks)
    for method in (testing.Namespace.compile, testing.Namespace.compile_each):
        wanted |= {f"{name}=" for name in inspect.signature(method).parameters if name not in ("self", "name", "calls")}
    missing = sorted(w for w in wanted if w not in guide)
    assert missing == [], f"docs/authoring.md does not name: {missing}"
    assert "a number (an `int`, not a list)" in guide                           # .frames
    assert "**`like=`**" in guide and "partial" in guide and "The `allow` list is in the student copy" in guide
