// Live view of a running run: refresh the counts every 2 s from the JSON
// report, and reload the page once when the run has finished. The page
// works without this script (reload it by hand).
(function () {
  "use strict";
  var el = document.querySelector("[data-live-run]");
  if (!el || !window.fetch) {
    return;
  }
  var api = "/api/runs/" + encodeURIComponent(el.getAttribute("data-live-run"));
  var fields = ["total", "succeeded", "failed", "skipped"];

  function format(n) {
    return Number(n).toLocaleString("en-US");
  }

  function set(name, text) {
    var nodes = document.querySelectorAll('[data-live="' + name + '"]');
    for (var i = 0; i < nodes.length; i++) {
      nodes[i].textContent = text;
    }
  }

  function tick() {
    fetch(api, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (resp) {
        if (!resp.ok) {
          throw new Error("HTTP " + resp.status);
        }
        return resp.json();
      })
      .then(function (rep) {
        var run = rep.run;
        fields.forEach(function (f) {
          set(f, format(run[f]));
        });
        if (run.status === "running" || run.status === "pending") {
          el.textContent = "Live: counts refresh every 2 seconds (last " + new Date().toLocaleTimeString() + ").";
          setTimeout(tick, 2000);
        } else {
          el.textContent = "The run is " + run.status + ": reloading.";
          window.location.reload();
        }
      })
      .catch(function (err) {
        el.textContent = "Live refresh paused (" + err.message + "); retrying.";
        setTimeout(tick, 5000);
      });
  }

  setTimeout(tick, 2000);
})();
