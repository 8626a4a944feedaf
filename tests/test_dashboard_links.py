"""The published dashboard links kerasbench's pages: a visitor of asv's site finds the report and the atlas."""

from kerasbench import dashboard

# asv 0.6's menu, as its index.html has it
MENU = """<body>
    <nav id="nav" class="navbar navbar-left navbar-default navbar-fixed-top" role="navigation">
      <ul class="nav navbar-nav navbar-left">
\t<li id="nav-li-" class="active"><a href="#/">Benchmark grid</a></li>
\t<li id="nav-li-summarylist"><a href="#/summarylist">Benchmark list</a></li>
\t<li id="nav-li-regressions"><a href="#/regressions">Regressions</a></li>
        <li id="nav-li-graphdisplay">
      </ul>
    </nav>
"""


def test_the_menu_links_the_pages_written_beside_it_once(tmp_path):
    (tmp_path / "index.html").write_text(MENU)
    (tmp_path / "kerasbench-report.html").write_text("<html></html>")
    assert dashboard.link_pages(str(tmp_path)) == ["kerasbench-report.html"]  # no atlas: one version
    page = (tmp_path / "index.html").read_text()
    regressions = page.index('<li id="nav-li-regressions">')
    assert page.index('<a href="kerasbench-report.html">kerasbench report</a>') > regressions
    assert "atlas" not in page
    assert dashboard.link_pages(str(tmp_path)) == [] and (tmp_path / "index.html").read_text() == page  # once


def test_the_atlas_is_linked_where_it_was_written(tmp_path):
    (tmp_path / "index.html").write_text(MENU)
    (tmp_path / "kerasbench-report.html").write_text("<html></html>")
    (tmp_path / "atlas").mkdir()
    (tmp_path / "atlas" / "index.html").write_text("<html></html>")
    assert dashboard.link_pages(str(tmp_path)) == ["kerasbench-report.html", "atlas/index.html"]
    assert '<a href="atlas/index.html">atlas</a>' in (tmp_path / "index.html").read_text()


def test_a_dashboard_without_asv_s_menu_is_left_as_it_is(tmp_path):
    (tmp_path / "index.html").write_text("<body>another asv</body>")
    (tmp_path / "kerasbench-report.html").write_text("<html></html>")
    assert dashboard.link_pages(str(tmp_path)) == []
    assert (tmp_path / "index.html").read_text() == "<body>another asv</body>"
