/* Marks the navigation link of the current page (aria-current="page"): the link to exactly this path, else
   the longest link path this page's path starts with, leaving out a section's index ("/scoring/") when other
   links live under it, so that a review page under /scoring/ does not mark the leaderboard.
   Also opens a folded section (<details>) that the address's #fragment points at.
   No inline script, so the strict CSP holds. */
(function () {
  "use strict";
  function mark() {
    var here = window.location.pathname;
    var links = Array.prototype.map.call(document.querySelectorAll(".nav a[href], .account a[href]"), function (a) {
      return { el: a, path: new URL(a.href, window.location.href).pathname };
    });
    var best = links.filter(function (l) { return l.path === here; })[0];
    if (!best) {
      links.forEach(function (l) {
        var isIndex = links.some(function (o) { return o !== l && o.path.indexOf(l.path) === 0 && o.path !== l.path; });
        if (l.path === "/" || isIndex || here.indexOf(l.path) !== 0) return;
        if (!best || l.path.length > best.path.length) best = l;
      });
    }
    if (best) best.el.setAttribute("aria-current", "page");
  }
  // Long pages fold their big sections (<details class="fold" id=...>); a link to one opens it.
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  function start() { mark(); openTarget(); window.addEventListener("hashchange", openTarget); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
