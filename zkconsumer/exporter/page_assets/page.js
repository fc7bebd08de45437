// The exporter's pages refresh their live part (<main id="live">) from the same path with
// fragment=1, every data-refresh-ms; on `/` the filter applies as one types, without a reload.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) { return; }
  var every = parseInt(document.body.getAttribute("data-refresh-ms"), 10) || 10000;
  var form = document.getElementById("filter");
  var pending = null;

  function fragmentUrl() {
    return live.getAttribute("data-fragment");
  }

  function refresh() {
    if (pending) { pending.abort(); }
    var request = pending = new AbortController();
    fetch(fragmentUrl(), { signal: request.signal, cache: "no-store" })
      .then(function (answer) { return answer.ok ? answer.text() : null; })
      .then(function (html) {
        if (html !== null && request === pending) {
          live.innerHTML = html;
          document.body.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () { /* the next refresh tries again */ });
  }

  if (form) {
    var timer = null;
    var apply = function () {
      var params = new URLSearchParams();
      new FormData(form).forEach(function (value, key) { if (value) { params.set(key, value); } });
      var query = params.toString();
      history.replaceState(null, "", "/" + (query ? "?" + query : ""));
      params.set("fragment", "1");
      live.setAttribute("data-fragment", "/?" + params.toString());
      refresh();
    };
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(apply, 150);
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); apply(); });
  }
  setInterval(refresh, every);
}());
