/* The site's wide content, laid out for the page (loaded by mkdocs.yml extra_javascript; no library, nothing
   fetched).  A code block a little wider than the page -- the tour's 100-column outputs -- gets a smaller font,
   down to MIN_FONT px, until it fits.  What still does not fit (a 13-column table or a terminal table on a
   phone) scrolls sideways in its own box: the box is marked (class commsim-scrolls, aria-describedby) and a note
   above it says so.  Done again when the window changes width. */
(function () {
  "use strict";
  var MIN_FONT = 10.5;
  var FIT = ".md-typeset pre > code, .jupyter-wrapper .highlight-ipynb";     // the elements that scroll
  var SCROLLERS = FIT + ", .md-typeset__scrollwrap, .jupyter-wrapper .jp-OutputArea-output, " +
    '.md-typeset math[display="block"]';
  var notes = 0;

  function overflows(el) {
    return el.scrollWidth > el.clientWidth + 1;
  }

  function fit(el) {
    var text = el.querySelector(":scope > pre") || el;       // a notebook's code cell scrolls around its <pre>
    text.style.fontSize = "";
    for (var i = 0; i < 4 && overflows(el); i++) {
      var size = parseFloat(window.getComputedStyle(text).fontSize);
      if (size <= MIN_FONT) break;
      var wanted = Math.floor(size * el.clientWidth / el.scrollWidth * 10) / 10;
      text.style.fontSize = Math.max(MIN_FONT, Math.min(wanted, size - 0.1)) + "px";
    }
  }

  function box(el) {          // the block the note goes above: a notebook cell's input or output row, a code
    var row = el.closest(".jp-Cell-inputWrapper, .jp-OutputArea-child");     // block's wrapper, else the scroller
    if (row && row.parentElement) return row;
    var pre = el.closest("pre");
    var block = pre ? (pre.closest(".highlight, .highlight-ipynb") || pre) : el;
    return block.parentElement ? block : el;
  }

  function mark(el) {
    var block = box(el);
    var note = block.previousElementSibling;
    var has = note && note.classList.contains("commsim-scroll-note");
    if (!overflows(el)) {
      el.classList.remove("commsim-scrolls");
      el.removeAttribute("aria-describedby");
      if (has) note.remove();
      return;
    }
    if (!has) {
      note = document.createElement("p");
      note.className = "commsim-scroll-note";
      note.id = "commsim-scroll-note-" + (++notes);
      var what = el.matches(".md-typeset__scrollwrap") ? "This table" : el.matches("math") ? "This formula" :
        el.matches(".jp-OutputArea-output") ? "This output" : "This block";
      note.textContent = what + " is wider than the page: scroll it sideways to see all of it.";
      block.parentElement.insertBefore(note, block);
    }
    el.classList.add("commsim-scrolls");
    el.setAttribute("aria-describedby", note.id);
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");     // scrollable by keyboard too
  }

  function layout() {
    document.querySelectorAll(FIT).forEach(fit);
    document.querySelectorAll(SCROLLERS).forEach(mark);
    document.documentElement.setAttribute("data-commsim-layout", "done");     // for the browser tests
  }

  var pending = null;
  window.addEventListener("resize", function () {
    window.clearTimeout(pending);
    pending = window.setTimeout(layout, 100);
  });
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(layout);        // the theme's page-load signal (also after instant navigation)
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", layout);
  } else {
    layout();
  }
})();
