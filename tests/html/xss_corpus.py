"""Known mutation-XSS and sanitizer-bypass strings, as test data for the page sanitizer.

Every payload, if it ran, calls ``pwn()`` (the browser tests bind it and record the call) or asks the network
for ``http://127.0.0.1:9/...`` (the browser tests refuse and record every request that is not the page file).

- :data:`MARKUP`: HTML written straight into a page (what a render path that forgot to escape would do).
- :data:`CSS`: ``style`` values, written as ``<p style>``, ``<svg><rect style>`` and latex2mathml's ``\\style``.
- :data:`LATEX`: formulas a plugin's lesson may hold; latex2mathml copies ``\\text{...}`` and ``\\style{...}``
  into its MathML unescaped.

:data:`LIVE_MARKUP` and :data:`LIVE_LATEX` name the payloads that do run (or fetch) in Chromium when the page is *not* sanitized: the
browser test checks that first, so the corpus is known to be armed.  The others are mutation strings: inert as
written, dangerous only after a sanitizer that reads them differently from a browser rewrites them.
"""
from __future__ import annotations

HOST = "http://127.0.0.1:9"
IMG = "<img src=x onerror=pwn()>"

MARKUP = {
    # raw text and RCDATA elements: a sanitizer that reads their content as markup, or as text, differently
    # from a browser
    "svg-style": f"<svg><style>{IMG}</style></svg>",
    "math-style": f"<math><style>{IMG}</style></math>",
    "svg-style-comment": '<svg><style><!--</style><img src=x onerror=pwn()>--></style></svg>',
    "style": f"<style>{IMG}</style>",
    "style-close-in-attr": '<svg></p><style><a id="</style><img src=1 onerror=pwn()>">',
    "noscript": '<noscript><p title="</noscript><img src=x onerror=pwn()>"></noscript>',
    "textarea": '<textarea><p title="</textarea><img src=x onerror=pwn()>"></textarea>',
    "xmp": '<xmp><p title="</xmp><img src=x onerror=pwn()>"></xmp>',
    "iframe-text": '<iframe><p title="</iframe><img src=x onerror=pwn()>"></iframe>',
    "noembed": '<noembed><p title="</noembed><img src=x onerror=pwn()>"></noembed>',
    "noframes": '<noframes><p title="</noframes><img src=x onerror=pwn()>"></noframes>',
    "title": '<title><p title="</title><img src=x onerror=pwn()>"></title>',
    "title-img": f"<title>{IMG}</title>",
    "template": f"<template>{IMG}</template><template><script>pwn()</script></template>",
    "plaintext": f"<plaintext>{IMG}",
    # foreign content: MathML and SVG switching the parser between HTML and XML rules
    "mglyph-style": '<math><mtext><table><mglyph><style><!--</style><img title="--&gt;&lt;/mglyph&gt;&lt;img'
                    '&Tab;src=1&Tab;onerror=pwn()&gt;">',
    "mglyph-style-plain": f"<math><mtext><table><mglyph><style>{IMG}</style></mglyph></table></mtext></math>",
    "form-math": f"<form><math><mtext></form><form><mglyph><style></math>{IMG}",
    "mi-mglyph-svg": '<math><mi><mglyph><svg><mtext><textarea><path id="</textarea><img onerror=pwn() src=1>">',
    "mtext-img": f"<math><mtext>{IMG}</mtext></math>",
    "annotation-xml": f'<math><annotation-xml encoding="text/html">{IMG}</annotation-xml></math>',
    "foreignobject": f"<svg><foreignObject>{IMG}</foreignObject></svg>",
    "svg-desc": f"<svg><desc>{IMG}</desc></svg>",
    "svg-title": f"<svg><title>{IMG}</title></svg>",
    "svg-breakout": f"<svg><p>{IMG}</p></svg>",
    "svg-font-breakout": '<svg><font color=red><img src=x onerror=pwn()></font></svg>',
    "svg-onload": "<svg onload=pwn()></svg>",
    "svg-script": "<svg><script>pwn()</script></svg>",
    "svg-script-href": '<svg><script href="data:text/javascript,pwn()"></script></svg>',
    "svg-animate": "<svg><animate onbegin=pwn() attributeName=x dur=1s></animate></svg>",
    "svg-set-href": '<svg><a><set attributeName=href to="javascript:pwn()"/><text x=9 y=9>x</text></a></svg>',
    "svg-a-xlink": '<svg><a xlink:href="javascript:pwn()"><text x=9 y=9>x</text></a></svg>',
    "svg-use-external": f'<svg><use href="{HOST}/u.svg#a"/></svg>',
    "svg-image-external": f'<svg><image href="{HOST}/i.png" width=9 height=9 /></svg>',
    "svg-cdata": "<svg><![CDATA[><img src=x onerror=pwn()>]]></svg>",
    # comments, CDATA and bogus declarations
    "comment-abrupt": f"<!-->{IMG}-->",
    "comment-dash": f"<!--->{IMG}-->",
    "comment-bang": f"<!--!>{IMG}-->",
    "cdata-html": f"<p><![CDATA[>{IMG}]]></p>",
    "bogus-comment": f"<?x>{IMG}",
    "end-tag-bogus": f"</ x=1>{IMG}",
    # event handlers and their spellings
    "img-onerror": IMG,
    "img-slashes": "<img/src=x/onerror=pwn()>",
    "img-upper": "<IMG SRC=x ONERROR=pwn()>",
    "img-entity-name": "<img src=x o&#110;error=pwn()>",
    "details-ontoggle": "<details open ontoggle=pwn()><summary>s</summary></details>",
    "input-autofocus": "<input autofocus onfocus=pwn()>",
    "body-onload": "<body onload=pwn()>",
    "video-source": "<video><source onerror=pwn()></video>",
    "unclosed-tag": "<img src=x onerror=pwn() <p>",
    # URLs: schemes, entities, whitespace, case
    "a-javascript": '<a href="javascript:pwn()">a</a>',
    "a-case": '<a href="jAvAsCrIpT:pwn()">a</a>',
    "a-entity": '<a href="&#x6a;avascript:pwn()">a</a>',
    "a-decimal": '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;pwn()">a</a>',
    "a-tab": '<a href="java&#x09;script:pwn()">a</a>',
    "a-newline": '<a href="java\nscript:pwn()">a</a>',
    "a-space": '<a href=" javascript:pwn()">a</a>',
    "a-colon-entity": '<a href="javascript&colon;pwn()">a</a>',
    "a-vbscript": '<a href="vbscript:pwn()">a</a>',
    "a-data": '<a href="data:text/html,&lt;script&gt;pwn()&lt;/script&gt;">a</a>',
    "a-external": f'<a href="{HOST}/a">a</a>',
    "math-href": '<math href="javascript:pwn()"><mi>x</mi></math>',
    "img-external": f'<img src="{HOST}/i.png">',
    "img-svg-data": '<img src="data:image/svg+xml,&lt;svg onload=pwn()&gt;">',
    "form-action": '<form action="javascript:pwn()"><input type=submit></form>',
    "button-formaction": '<form><button formaction="javascript:pwn()">b</button></form>',
    "iframe-srcdoc": '<iframe srcdoc="&lt;img src=x onerror=parent.pwn()&gt;"></iframe>',
    "iframe-src": '<iframe src="javascript:parent.pwn()"></iframe>',
    "object-data": '<object data="javascript:parent.pwn()"></object>',
    "embed-src": f'<embed src="{HOST}/e.swf">',
    "base-href": f'<base href="{HOST}/"><img src="b.png">',
    "meta-refresh": f'<meta http-equiv="refresh" content="0;url={HOST}/r">',
    "link-stylesheet": f'<link rel=stylesheet href="{HOST}/s.css">',
    "script": "<script>pwn()</script>",
    "script-split": "<scr<script>ipt>pwn()</script>",
}

CSS = {
    "url": f"background-image:url({HOST}/c1)",
    "url-hex-escape": f"background-image:u\\72l({HOST}/c2)",
    "url-long-escape": f"background-image:u\\000072 l({HOST}/c3)",
    "url-letter-escape": f"background-image:u\\r\\l({HOST}/c4)",
    "url-escape-paren": f"background-image:url\\28{HOST}/c5)",
    "url-in-allowed": f"color:red;fill:url({HOST}/c6#p)",
    "image-set": f"background-image:image-set('{HOST}/c7' 1x)",
    "webkit-image-set": f"background-image:-webkit-image-set(url({HOST}/c8) 1x)",
    "import": f"@import '{HOST}/c9.css'",
    "expression": "width:expression(pwn())",
    "var-url": f"--x:url({HOST}/c10);background:var(--x)",
    "comment-split": f"background:u/**/rl({HOST}/c11)",
    "semicolon-escape": f"color:red\\3b background-image:url({HOST}/c12)",
    "list-style": f"list-style-image:url({HOST}/c13)",
    "cursor": f"cursor:url({HOST}/c14),auto",
}

LATEX = {    # latex2mathml writes a space in \text as U+00A0: the tags below use "/" between attributes
    "text-svg-style": r'\text{<svg><style><img/src="x"/onerror="pwn()"></style></svg>}',
    "text-math-style": r'\text{<math><style><img/src="x"/onerror="pwn()"></style></math>}',
    "text-img": r'\text{<img/src="x"/onerror="pwn()">}',
    "text-mglyph": r'\text{<table><mglyph><style><img/src="x"/onerror="pwn()"></style></mglyph></table>}',
    "text-comment": r'\text{<!--><img/src="x"/onerror="pwn()">-->}',
    "text-noscript": r"""\text{<noscript><p/title="</noscript><img/src='x'/onerror='pwn()'>"></noscript>}""",
    "text-iframe": r'\text{<iframe/srcdoc="&lt;img/src=&quot;x&quot;/onerror=&quot;parent.pwn()&quot;&gt;"></iframe>}',
    "text-base": rf'\text{{<base/href="{HOST}/"><img/src="b.png">}}',
    "text-svg-a": r'\text{<svg><a/href="javascript:pwn()"><text/x="9"/y="9">x</text></a></svg>}',
    "href-javascript": r"\href{javascript:pwn()}{x}",
    "href-external": rf"\href{{{HOST}/h}}{{x}}",
    "style-escape": rf"\style{{background-image:u\72l({HOST}/l1)}}{{x}}",
    "style-url": rf"\style{{background-image:url({HOST}/l2)}}{{x}}",
    "style-image-set": rf"\style{{background-image:image-set('{HOST}/l3' 1x)}}{{x}}",
    "color-url": rf"\color{{url({HOST}/l4)}}{{x}}",
    "class-figures": r"\class{figures}{x}",
}

#: the :func:`all_markup` payloads that run or fetch in Chromium when nothing sanitizes the page (the browser
#: test checks each); the rest are mutation strings (inert as written)
LIVE_MARKUP = frozenset({
    "a-case", "a-colon-entity", "a-decimal", "a-entity", "a-external", "a-javascript", "a-newline", "a-space",
    "a-tab", "annotation-xml", "base-href", "body-onload", "bogus-comment", "button-formaction", "cdata-html",
    "comment-abrupt", "comment-dash", "css-cursor", "css-image-set", "css-list-style", "css-url",
    "css-url-hex-escape", "css-url-in-allowed", "css-url-letter-escape", "css-url-long-escape", "css-var-url",
    "css-webkit-image-set", "details-ontoggle", "end-tag-bogus", "foreignobject", "form-action", "iframe-src",
    "iframe-srcdoc", "iframe-text", "img-entity-name", "img-external", "img-onerror", "img-slashes", "img-upper",
    "input-autofocus", "link-stylesheet", "math-style", "meta-refresh", "mi-mglyph-svg", "mtext-img", "noembed",
    "noframes", "noscript", "script", "style-close-in-attr", "svg-a-xlink", "svg-animate", "svg-breakout",
    "svg-cdata", "svg-desc", "svg-font-breakout", "svg-image-external", "svg-onload", "svg-script",
    "svg-script-href", "svg-set-href", "svg-style", "svg-style-comment", "svg-title", "textarea", "title",
    "unclosed-tag", "video-source", "xmp"})
#: the :data:`LATEX` formulas that run or fetch in Chromium when nothing sanitizes latex2mathml's MathML
LIVE_LATEX = frozenset({
    "style-escape", "style-image-set", "style-url", "text-base", "text-comment", "text-iframe", "text-img",
    "text-math-style", "text-noscript", "text-svg-a", "text-svg-style"})


def css_markup(name: str) -> str:
    """:data:`CSS` ``name`` as a styled paragraph and a styled SVG shape (the quotes it holds, escaped)."""
    value = CSS[name].replace('"', "&quot;")
    return f'<p style="{value}">styled</p><svg><rect width="9" height="9" style="{value}"/></svg>'


def all_markup() -> dict[str, str]:
    """Every HTML payload: :data:`MARKUP`, and each :data:`CSS` value as markup (``css-NAME``)."""
    return MARKUP | {f"css-{name}": css_markup(name) for name in CSS}
