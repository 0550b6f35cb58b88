"""The course site in a real headless browser: build it, serve it on 127.0.0.1, crawl every page.

Checks what a student meets: meaningful titles, the sidebar in lesson order, a page table of
contents, previous/next, every internal link (and its #fragment) resolving, stored plots that
load, search that finds "guard", the tlparse report, and not one request leaving 127.0.0.1.
Expected titles and order are read from the notebooks themselves, not written here.

Needs Debian's chromium at /usr/bin/chromium (`make test` installs it when it runs as root);
without it the module is skipped with that reason. Playwright drives it; no browser download.
"""

from __future__ import annotations

import functools
import http.server
import inspect
import os
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import nbformat
import pytest
from playwright.sync_api import sync_playwright

from compile_course.paths import NOTEBOOKS
from course_tools.site import traced_lesson
from course_tools.site.build import REPORT_FOLDER, build_site, remote_assets, stage_folder
from course_tools.site.published_links import lesson_report_target, published_target

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
LOCAL_HOST = "127.0.0.1"
PAGE_TIMEOUT_MS = 30_000
SEARCH_WORD = "guard"

def _no_chromium_reason() -> str | None:
    if CHROMIUM.exists():
        return None
    return ("Debian's chromium is not installed at /usr/bin/chromium"
            + ("; as root, run `apt-get install -y chromium` (`make test` does)" if os.geteuid() == 0
               else " and this user is not root, so it cannot be installed here"))


def first_heading(path: Path) -> str:
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):  # as the page shows it: inline markup rendered, not spelled out
                    return line[2:].strip().replace("`", "").replace("**", "")
    raise AssertionError(f"{path.name} has no '# ' heading")


@dataclass
class Page:
    url: str
    status: int  # of the navigation itself
    title: str
    links: list[str]  # absolute, as the browser resolved them (tlparse pages use <base href>)
    ids: set[str]
    broken_images: list[str]
    stored_plots: int  # <img> from the notebooks' stored PNG outputs
    sidebar: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # caption -> [(text, href)]
    page_toc: int = 0
    prev_next: tuple[str | None, str | None] = (None, None)
    outputs: int = 0  # rendered code-cell outputs (myst-nb's div.cell_output)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output to the failures
        pass


def test_remote_assets_names_what_a_page_would_fetch(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "p.html").write_text(
        '<script src="https://cdn.example/mathjax.js"></script><link rel="stylesheet" href="//fonts.example/a.css">'
        '<img src="../_images/plot.png"><a href="https://example.org/">a link is not a load</a>')
    (tmp_path / "q.html").write_text('<script src="_static/local.js"></script>')
    found = remote_assets(tmp_path)
    assert len(found) == 2 and all(line.startswith("sub/p.html: ") for line in found), found


@pytest.mark.parametrize(("docname", "target", "published"), [
    ("notebooks/04_graph_breaks", "../tlparse/index.html", True),
    ("tlparse", "tlparse/index.html#frag", True),
    ("notebooks/04_graph_breaks", "tlparse/index.html", False),  # notebooks/tlparse/ is not published
    ("notebooks/04_graph_breaks", "05_guards_and_recompiles.ipynb", False),
    ("index", "https://example.org/tlparse/index.html", False),
])
def test_published_target(docname, target, published):
    assert published_target(docname, target) is published


@pytest.mark.parametrize(("docname", "target", "on_the_site"), [
    ("notebooks/01_lesson_goals", "tlparse-report/index.html", "../tlparse/index.html"),
    ("notebooks/01_lesson_goals", "tlparse-report/index.html#frag", "../tlparse/index.html#frag"),
    ("notebooks/01_lesson_goals", "../tlparse/index.html", None),  # already the published report
    ("index", "tlparse-report/index.html", None),  # only the notebooks' folder is a lesson's report
])
def test_a_lessons_own_report_links_to_the_published_one(docname, target, on_the_site):
    # Lab opens the report the lesson's cell wrote beside the notebook; the site, which runs no
    # notebook, links the report its build made.
    assert lesson_report_target(docname, target) == on_the_site


def test_traced_function_is_notebook_04s():
    # The tlparse page says the report traces notebook 04's function: it must be the same code.
    notebook = next(NOTEBOOKS.glob("04_*.ipynb"))
    cells = [c.source for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    source = inspect.getsource(traced_lesson.branch_on_values)
    assert any(source.strip() in cell for cell in cells), f"{notebook.name} no longer defines:\n{source}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if _no_chromium_reason():  # the build is only needed by the browser checks
        pytest.skip(_no_chromium_reason())
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(out, strict=True)  # strict: a Sphinx warning (e.g. a dead cross-reference) fails here
    return out


# Expectations come from the notebooks the build staged (the same bytes Sphinx read), not from
# notebooks/ again: other work may rewrite a notebook's stored outputs while this module runs.
@pytest.fixture(scope="module")
def lessons(site) -> list[Path]:
    found = sorted((stage_folder(site) / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert found, "no lesson was staged"
    return found


@pytest.fixture(scope="module")
def exercises(site) -> list[Path]:
    found = sorted((stage_folder(site) / "exercises").glob("ex[0-9][0-9]_*.ipynb"))
    assert found, "no exercise was staged"
    return found


@pytest.fixture(scope="module")
def base_url(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer((LOCAL_HOST, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://{LOCAL_HOST}:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser_page(base_url):
    """One headless chromium page; every request it makes is recorded, and any off 127.0.0.1 is aborted."""
    if _no_chromium_reason():
        pytest.skip(_no_chromium_reason())
    requests: dict[str, list[str]] = {"outside": [], "failed": []}

    def route(route, request):
        if urlsplit(request.url).hostname == LOCAL_HOST or request.url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            requests["outside"].append(request.url)
            route.abort()

    def on_response(response):
        if response.status >= 400:
            requests["failed"].append(f"{response.status} {response.url}")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.on("response", on_response)
        yield page, requests
        browser.close()


_READ_PAGE = """() => {
  const sidebar = {};
  let caption = null;
  for (const el of document.querySelectorAll('nav.bd-docs-nav p.caption, nav.bd-docs-nav ul.bd-sidenav > li > a')) {
    if (el.matches('p.caption')) { caption = el.textContent.trim(); sidebar[caption] = []; }
    else if (caption) sidebar[caption].push([el.textContent.trim(), el.href]);
  }
  const imgs = [...document.images];
  const prev = document.querySelector('a.left-prev'), next = document.querySelector('a.right-next');
  return {
    title: document.title,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id)
          .concat([...document.querySelectorAll('a[name]')].map(a => a.name)),
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    plots: imgs.filter(i => i.src.includes('/_images/')).length,
    sidebar,
    toc: document.querySelectorAll('.bd-sidebar-secondary nav a.nav-link').length,
    outputs: document.querySelectorAll('div.cell_output').length,
    prev: prev ? prev.href : null,
    next: next ? next.href : null,
  };
}"""


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture(scope="module")
def crawl(base_url, browser_page) -> dict[str, Page]:
    """Visit every HTML page reachable from index.html on this site; other local targets are fetched, not visited."""
    page, _ = browser_page
    pages: dict[str, Page] = {}
    queue = [base_url + "index.html"]
    while queue:
        url = queue.pop()
        if url in pages:
            continue
        response = page.goto(url, wait_until="load")
        data = page.evaluate(_READ_PAGE)
        pages[url] = Page(url, response.status if response else 0, data["title"], data["links"], set(data["ids"]),
                          data["broken"], data["plots"], data["sidebar"], data["toc"], (data["prev"], data["next"]),
                          data["outputs"])
        for link in data["links"]:
            target = urldefrag(link).url.split("?", 1)[0]
            if target.startswith(base_url) and target.endswith(".html") and target not in pages:
                queue.append(target)
    return pages


def _sphinx_pages(crawl, base_url) -> dict[str, Page]:
    return {u: p for u, p in crawl.items() if not u.startswith(base_url + REPORT_FOLDER + "/")}


def test_every_lesson_exercise_and_the_report_is_a_page(crawl, base_url, lessons, exercises):
    expected = ([f"{base_url}notebooks/{p.stem}.html" for p in lessons]
                + [f"{base_url}exercises/{p.stem}.html" for p in exercises]
                + [f"{base_url}{REPORT_FOLDER}/index.html"])
    missing = [u for u in expected if u not in crawl]
    assert not missing, f"not reachable by links from index.html: {missing}"


def test_titles_come_from_the_notebook_headings(crawl, base_url, lessons, exercises):
    for folder, notebooks in (("notebooks", lessons), ("exercises", exercises)):
        for path in notebooks:
            title = crawl[f"{base_url}{folder}/{path.stem}.html"].title
            assert title.startswith(first_heading(path)), (path.name, title)
    for url, page in _sphinx_pages(crawl, base_url).items():
        assert page.title.strip() and not page.title.startswith("Notebook"), (url, page.title)


def test_sidebar_lists_lessons_then_exercises_in_order(crawl, base_url, lessons, exercises):
    for folder, notebooks in (("notebooks", lessons), ("exercises", exercises)):
        for path in notebooks:
            url = f"{base_url}{folder}/{path.stem}.html"
            sidebar = crawl[url].sidebar
            assert list(sidebar)[:2] == ["Lessons", "Exercises"], (url, list(sidebar))
            for caption, entries in (("Lessons", lessons), ("Exercises", exercises)):
                texts = [text for text, _ in sidebar[caption]]
                assert texts == [first_heading(p) for p in entries], (url, caption, texts)
    report_entries = [href for entries in crawl[base_url + "index.html"].sidebar.values() for _, href in entries]
    assert base_url + "tlparse.html" in report_entries


def test_lessons_have_a_page_toc_and_previous_next_in_order(crawl, base_url, lessons):
    urls = [f"{base_url}notebooks/{p.stem}.html" for p in lessons]
    for i, url in enumerate(urls):
        page = crawl[url]
        assert page.page_toc >= 3, (url, page.page_toc)  # the sections: What you will learn, ..., Summary
        prev, nxt = page.prev_next
        if i > 0:
            assert prev == urls[i - 1], (url, prev)
        if i + 1 < len(urls):
            assert nxt == urls[i + 1], (url, nxt)


def test_every_internal_link_resolves_with_its_fragment(crawl, base_url):
    problems, checked = [], {}
    for url, page in crawl.items():
        for link in page.links:
            if not link.startswith(base_url):
                continue
            target, fragment = urldefrag(link)
            target = target.split("?", 1)[0]
            if target.endswith("/"):  # a folder: only its index page counts (no server listing)
                target += "index.html"
            if target in crawl:
                status = crawl[target].status
            else:
                status = checked.setdefault(target, _status(target))
            if status != 200:
                problems.append(f"{url} -> {link}: HTTP {status}")
            elif fragment and target in crawl and fragment not in crawl[target].ids:
                problems.append(f"{url} -> {link}: no element with id {fragment!r}")
    assert not problems, "\n".join(problems)


def test_notebook_links_become_page_links(crawl, base_url):
    # The notebooks link each other as NN_x.ipynb and ../exercises/exNN_x.ipynb; on the site
    # every such link must land on the page, never on a raw .ipynb.
    for url, page in _sphinx_pages(crawl, base_url).items():
        raw = [link for link in page.links if urldefrag(link).url.endswith(".ipynb") and "/_sources/" not in link]
        assert not raw, (url, raw)


def test_every_stored_output_is_rendered(crawl, base_url, lessons, exercises):
    # Nothing is executed for the site, and nothing stored is dropped: one rendered output block per
    # code cell that has stored outputs.
    for folder, notebooks in (("notebooks", lessons), ("exercises", exercises)):
        for path in notebooks:
            cells = nbformat.read(path, as_version=4).cells
            stored = sum(1 for cell in cells if cell.cell_type == "code" and cell.outputs)
            shown = crawl[f"{base_url}{folder}/{path.stem}.html"].outputs
            assert shown == stored, f"{path.name}: {shown} outputs on the page, {stored} code cells with outputs"


def test_stored_plots_load(crawl, base_url, site, lessons, exercises):
    stored_pngs = sum("image/png" in output.get("data", {})
                      for path in lessons + exercises
                      for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
                      for output in cell.outputs)
    assert stored_pngs > 0, "the lessons store at least one plot"
    shown = sum(page.stored_plots for page in crawl.values())
    assert shown == stored_pngs, f"{shown} plots on the pages, {stored_pngs} PNG outputs stored"
    broken = {url: page.broken_images for url, page in crawl.items() if page.broken_images}
    assert not broken, broken


def test_search_finds_guard(browser_page, base_url, lessons):
    page, _ = browser_page
    page.goto(f"{base_url}search.html?q={SEARCH_WORD}", wait_until="load")
    page.wait_for_selector("ul.search li", timeout=PAGE_TIMEOUT_MS)
    titles = page.eval_on_selector_all("ul.search li a", "as => as.map(a => a.textContent.trim())")
    lesson_titles = {first_heading(p) for p in lessons}
    assert lesson_titles & set(titles), titles


def test_tlparse_report_shows_the_break_and_the_recompile(browser_page, base_url, site):
    page, _ = browser_page
    page.goto(f"{base_url}{REPORT_FOLDER}/index.html", wait_until="load")
    listed = page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
    assert any("dynamo_graph_break_reason" in href for href in listed), "no graph-break entry in the report"
    reasons = sorted((site / REPORT_FOLDER).glob("*/recompile_reasons_*.json"))
    assert reasons, "no recompile in the report"
    assert any("size mismatch" in path.read_text() for path in reasons), [p.read_text() for p in reasons]
    # The explanation page names the compile ids it describes; they must be the report's, all of them.
    in_report = set(page.eval_on_selector_all("a[id]", "as => as.map(a => a.id)"))
    described = set(re.findall(r"\[\d+/\d+\]", (stage_folder(site) / "tlparse.md").read_text()))
    assert described == {i for i in in_report if re.fullmatch(r"\[\d+/\d+\]", i)}, (described, in_report)


def test_no_request_left_127_0_0_1_and_none_failed(browser_page, crawl):
    # Runs after the crawl and the searches above (same module-scoped page).
    _, requests = browser_page
    assert crawl, "the crawl visited nothing"
    assert not requests["outside"], requests["outside"]
    assert not requests["failed"], requests["failed"]

