"""An mkdocs hook (mkdocs.yml ``hooks:``): a page's link to a file of the source tree outside ``docs/``
(``[the example](../tests/plugin_example)``, right on GitHub) has no page on the site; it becomes the file's path
as code, with a link into the repository when mkdocs.yml names one (``repo_url``).  Links between pages are
left to mkdocs, whose strict build fails on a broken one."""
from __future__ import annotations

import posixpath
import re

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((\.\./[^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page, config, files) -> str:
    here = posixpath.dirname(page.file.src_uri)
    repo = (config.get("repo_url") or "").rstrip("/")

    def rewrite(m: re.Match) -> str:
        target = posixpath.normpath(posixpath.join("docs", here, m.group(2)))
        if target.startswith("docs/") or target.startswith(".."):
            return m.group(0)                       # a page of the site (or outside the repository): mkdocs checks it
        shown = m.group(1).strip("`").rstrip("/")
        text = m.group(1) if shown == target else f"{m.group(1)} (`{target}`)"
        return f"[{text}]({repo}/tree/HEAD/{target})" if repo else text
    return _LINK.sub(rewrite, markdown)
