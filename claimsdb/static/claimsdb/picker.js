// Pickers (claimsdb/web/pickers.py): as a key is typed into an input with data-suggest,
// its datalist is replaced with what the server suggests for the text typed so far.
// Without this file the inputs still take a typed key, with the page's own suggestions.
(function () {
  "use strict";
  var timers = new WeakMap();
  var asked = new WeakMap();

  function refresh(input) {
    var typed = input.value.trim();
    if (asked.get(input) === typed) return;
    asked.set(input, typed);
    var list = document.getElementById(input.getAttribute("list"));
    if (!list) return;
    var url = new URL(input.dataset.suggest, window.location.href);
    url.searchParams.set("q", typed);
    fetch(url.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null || asked.get(input) !== typed) return;
        var parsed = new DOMParser().parseFromString("<datalist>" + html + "</datalist>", "text/html");
        var options = parsed.querySelectorAll("option");
        list.replaceChildren.apply(list, Array.prototype.map.call(options, function (option) {
          return document.importNode(option, true);
        }));
      })
      .catch(function () {});
  }

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.dataset.suggest) return;
    clearTimeout(timers.get(input));
    timers.set(input, setTimeout(function () { refresh(input); }, 150));
  });
})();
