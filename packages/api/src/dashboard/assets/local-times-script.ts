/**
 * Every page's script, served at /dashboard/assets/local-times.js (the CSP allows scripts from this
 * origin only, none inline). The server writes each instant as
 * `<time datetime="…Z" data-local>2026-11-25 14:03:07 UTC</time>` (format.ts, timeCell), which is
 * what a browser without JavaScript shows. This rewrites the text in the viewer's time zone
 * (`2026-11-25 15:03:07 GMT+1`), keeping the UTC text as the tooltip, and does the same for
 * elements added later (htmx refreshes, the session page's live records) through a
 * MutationObserver. Only `[data-local]` elements are touched: the timeline's `<time>`s are offsets.
 */
const SOURCE = String.raw`(function () {
  "use strict";
  if (typeof Intl !== "object" || typeof MutationObserver !== "function") return;
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  var format = new Intl.DateTimeFormat("en-GB", {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    hourCycle: "h23", timeZoneName: "short", timeZone: zone
  });
  function local(date) {
    var parts = {};
    format.formatToParts(date).forEach(function (p) { parts[p.type] = p.value; });
    return parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute + ":" + parts.second + " " + (parts.timeZoneName || zone);
  }
  function rewrite(el) {
    if (el.getAttribute("data-local-zone")) return;
    var date = new Date(el.getAttribute("datetime"));
    if (isNaN(date.getTime())) return;
    if (!el.title) el.title = el.textContent;
    el.textContent = local(date);
    el.setAttribute("data-local-zone", zone);
  }
  function within(node) {
    if (node.nodeType !== 1) return;
    if (node.matches("time[datetime][data-local]")) rewrite(node);
    node.querySelectorAll("time[datetime][data-local]").forEach(rewrite);
  }
  within(document.body);
  new MutationObserver(function (changes) {
    changes.forEach(function (change) { change.addedNodes.forEach(within); });
  }).observe(document.body, { childList: true, subtree: true });
})();
`;

export const LOCAL_TIMES_SCRIPT = { name: "local-times.js", path: "/dashboard/assets/local-times.js", source: SOURCE } as const;
