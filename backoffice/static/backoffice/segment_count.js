// The live count of a segment's form: as a filter changes, ask the back office how many contacts it holds now.
(function () {
  "use strict";
  var box = document.getElementById("segment-count");
  var form = box && document.querySelector("#content-main form");
  if (!form) return;
  var timer = null;
  var asked = 0;
  function count() {
    var data = new FormData(form);
    data.delete("csrfmiddlewaretoken");
    var query = new URLSearchParams(data).toString();
    var mine = ++asked;
    fetch(box.dataset.countUrl + "?" + query, { credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (body) {
        if (mine !== asked) return; // an older answer arriving late
        box.textContent = body.error ? body.error : body.count + (body.count === 1 ? " contact now" : " contacts now");
      })
      .catch(function () { box.textContent = "The count is not available right now."; });
  }
  function later() {
    clearTimeout(timer);
    timer = setTimeout(count, 300);
  }
  form.addEventListener("input", later);
  form.addEventListener("change", later);
})();
