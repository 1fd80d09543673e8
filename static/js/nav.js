/* Marks the navigation link of the current page (aria-current="page"): the link whose path is the
   longest prefix of this page's path. No inline script, so the strict CSP holds. */
(function () {
  "use strict";
  function mark() {
    var here = window.location.pathname, best = null, bestLength = 0;
    document.querySelectorAll(".nav a[href]").forEach(function (a) {
      var path = new URL(a.href, window.location.href).pathname;
      var matches = path === "/" ? here === "/" : here.indexOf(path) === 0;
      if (matches && path.length > bestLength) { best = a; bestLength = path.length; }
    });
    if (best) best.setAttribute("aria-current", "page");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
})();
