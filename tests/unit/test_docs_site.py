"""The manual (docs/, mkdocs.yml) and the README as its front page.

The site is built once, in strict mode, as `scripts/docs` builds it: a broken link or anchor, a
page missing from the nav, a docstring mkdocstrings cannot read, or a generated table whose code
changed shape fails the build. The generated references are then read back from the built
pages and compared with what they describe: every command and option of the click commands,
every key of the key table with its default. The examples of the README and the manual are
parsed by the commands they call."""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from test_cli_front_options import commands

from zkconsumer.cli import cli
from zkconsumer.config.key_meanings import MEANINGS
from zkconsumer.config.keys import KEYS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
HEADING = re.compile(r'<h[1-6] id="([^"]+)"')


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built from nothing with --strict into a folder of the test's own."""
    site_dir = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(site_dir)], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, check=False,
                           env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert built.returncode == 0, built.stderr[-5000:]
    assert "WARNING" not in built.stderr, built.stderr[-5000:]
    return site_dir


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def sections(page: Path) -> dict[str, str]:
    """A built page's text under each heading, by the heading's id, up to the next heading."""
    content = page.read_text()
    marks = [(match.start(), match.group(1)) for match in HEADING.finditer(content)]
    ends = [start for start, _ in marks[1:]] + [len(content)]
    return {anchor: text_of(content[start:end]) for (start, anchor), end in zip(marks, ends,
                                                                                 strict=True)}


def test_every_page_in_docs_is_built(site):
    for page in DOCS.rglob("*.md"):
        relative = page.relative_to(DOCS).with_suffix("")
        built = site / ("index.html" if relative.name == "index" else relative / "index.html")
        assert built.is_file(), f"{page} was not built"


def test_the_command_reference_covers_every_command_and_option(site):
    by_anchor = sections(site / "reference" / "cli" / "index.html")
    for path, command in commands():
        anchor = "-".join(["zkconsumer", *path])
        assert anchor in by_anchor, f"no section for 'zkconsumer {' '.join(path)}'"
        section = by_anchor[anchor]
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            for flag in [*param.opts, *param.secondary_opts]:
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", section), \
                    (anchor, flag)
            if isinstance(param.envvar, str):
                # --help wraps a long name mid-word, as the page shows it.
                assert re.search(rf"envvar:{param.envvar}[];]", re.sub(r"\s+", "", section)), \
                    (anchor, param.envvar)


def test_the_configuration_reference_gives_every_key_its_default_and_meaning(site):
    page = (site / "reference" / "configuration" / "index.html").read_text()
    rows = {text_of(key): (text_of(default), text_of(meaning)) for key, default, meaning in
            re.findall(r"<tr>\s*<td>(<code>[^<]+</code>)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>",
                       page, re.DOTALL)}
    assert set(rows) == {key.name for key in KEYS}
    for key in KEYS:
        default, meaning = rows[key.name]
        if key.required:
            assert default == "required", key.name
        elif key.derive is None and key.default is not None and key.render(key.default):
            assert default == key.render(key.default), key.name
        assert meaning.startswith(MEANINGS[key.name].replace("`", "")), key.name


def test_every_key_has_a_meaning_and_every_meaning_a_key():
    assert set(MEANINGS) == {key.name for key in KEYS}
    assert all(meaning.strip() for meaning in MEANINGS.values())


def test_the_architecture_page_shows_every_layer_of_the_layering_test(site):
    from test_layering import LAYERS

    page = text_of((site / "architecture" / "index.html").read_text())
    for layer in LAYERS:
        assert re.search(r"\|?\s*" + r",\s*".join(map(re.escape, layer)), page), layer


def test_the_readme_is_a_front_page_with_the_two_commands_first():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    first_block = re.search(r"^```(\w*)\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    assert first_block is not None
    assert [line.split()[0] for line in first_block.group(2).splitlines()] \
        == ["scripts/run", "scripts/test"]
    assert text.index("## Two commands") < text.index("## The manual")


def test_the_readme_links_to_pages_that_exist():
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert links
    for link in links:
        assert (ROOT / link).is_file(), link


def documented_commands() -> list[tuple[str, str]]:
    """(file, command line) of every `zkconsumer ...` in a shell example of the README or the
    manual; synopses with `[...]` are left out."""
    found = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        for block in re.findall(r"^ *```(?:bash|sh)\n(.*?)^ *```$", page.read_text(),
                                re.DOTALL | re.MULTILINE):
            for line in block.replace("\\\n", " ").splitlines():
                start = line.find("zkconsumer ")
                if start < 0 or "[" in line.split("#")[0]:
                    continue
                found.append((str(page.relative_to(ROOT)), line[start:]))
    return found


EXAMPLES = documented_commands()


@pytest.mark.parametrize(("page", "line"), EXAMPLES, ids=[line for _, line in EXAMPLES])
def test_each_documented_command_is_accepted_by_the_command_line(monkeypatch, tmp_path, page,
                                                                  line):
    # The getting-started page exports the ZooKeeper address once for the commands after it;
    # files an example reads are the reader's own (made here, empty).
    monkeypatch.setenv("ZKCONSUMER_ZOOKEEPER_CONNECT", "zk1:2181")
    monkeypatch.chdir(tmp_path)
    words = []
    for word in shlex.split(line, comments=True)[1:]:
        if word in ("|", "&", ";", "&&", "||") or re.match(r"^\d?>", word):
            break
        words.append(word)
    # Each command's context under its parents', as `zkconsumer ...` makes them (the help
    # option's names, for one, come from the root's settings).
    command: click.Command = cli
    parent = click.Context(cli, info_name="zkconsumer", **cli.context_settings)
    while isinstance(command, click.Group) and words and words[0] in command.commands:
        name = words.pop(0)
        command = command.commands[name]
        if isinstance(command, click.Group):
            parent = click.Context(command, parent=parent, info_name=name,
                                   **command.context_settings)
    assert not isinstance(command, click.Group), (page, line)
    reads_files = {flag for param in command.params if isinstance(param, click.Option)
                   and isinstance(param.type, click.Path) and param.type.exists
                   for flag in param.opts}
    for flag, value in zip(words, words[1:], strict=False):
        if flag in reads_files:
            (tmp_path / value).touch()
    command.make_context(command.name, words, parent=parent)


def test_the_python_api_reference_documents_every_public_name(site):
    import zkconsumer

    anchors = set(HEADING.findall((site / "reference" / "python-api" / "index.html").read_text()))
    for name in set(zkconsumer.__all__) - {"__version__"}:
        assert any(anchor.endswith(f".{name}") for anchor in anchors), name
