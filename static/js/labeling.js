/* Keyboard-first labeling page: move between questions, answer with n/u/y (0/5/1), accept the model
   suggestion with a, autosave drafts, reveal/blur the image, zoom (+ / - / x, the wheel) and pan it
   (Shift+arrows, dragging), submit with Enter or s (the server then opens the next image), skip with k
   (asks first when the draft holds work). A focused control keeps its own keys. Loaded by templates/annotations/labeling.html;
   no inline script, all configuration comes from data- attributes so a strict CSP can forbid inline code. */
(function () {
  "use strict";

  var KEY_VALUES = { n: "0", "0": "0", u: "0.5", "5": "0.5", y: "1", "1": "1" };
  var ZOOM_MIN = 1, ZOOM_MAX = 8, ZOOM_STEP = 1.25, PAN_STEP = 60;

  // Zoom and pan of the labeling image: a CSS transform inside a frame that clips it. The state is
  // mirrored in data-zoom / data-pan-x / data-pan-y on the image (tests and CSS read them).
  function setupZoom(image, frame, levelEl) {
    var z = 1, tx = 0, ty = 0;
    function clamp() {
      var w = frame.clientWidth, h = frame.clientHeight;
      var mx = (z - 1) * w / 2, my = (z - 1) * h / 2;
      tx = Math.max(-mx, Math.min(mx, tx));
      ty = Math.max(-my, Math.min(my, ty));
    }
    function apply() {
      clamp();
      image.style.transform = z === 1 ? "" : "translate(" + tx + "px, " + ty + "px) scale(" + z + ")";
      image.dataset.zoom = z.toFixed(2);
      image.dataset.panX = Math.round(tx);
      image.dataset.panY = Math.round(ty);
      frame.classList.toggle("zoomed", z > 1);
      if (levelEl) levelEl.textContent = Math.round(z * 100) + "%";
    }
    // Zoom by `factor` keeping the point (cx, cy), relative to the frame's centre, where it is.
    function zoomBy(factor, cx, cy) {
      var next = Math.max(ZOOM_MIN, Math.min(ZOOM_MAX, z * factor));
      cx = cx || 0; cy = cy || 0;
      tx = cx - (cx - tx) * (next / z);
      ty = cy - (cy - ty) * (next / z);
      z = next;
      apply();
    }
    function pan(dx, dy) { tx += dx; ty += dy; apply(); }
    function reset() { z = 1; tx = 0; ty = 0; apply(); }
    frame.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = frame.getBoundingClientRect();
      zoomBy(e.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP, e.clientX - r.left - r.width / 2, e.clientY - r.top - r.height / 2);
    }, { passive: false });
    // Dragging pans; a drag is not a click (the click on the image toggles the blur).
    var drag = null, dragged = false;
    frame.addEventListener("pointerdown", function (e) {
      if (z === 1) return;
      drag = { x: e.clientX, y: e.clientY };
      dragged = false;
      frame.setPointerCapture(e.pointerId);
    });
    frame.addEventListener("pointermove", function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) dragged = true;
      drag = { x: e.clientX, y: e.clientY };
      pan(dx, dy);
    });
    frame.addEventListener("pointerup", function () { drag = null; });
    frame.addEventListener("click", function (e) {
      if (dragged) { e.stopPropagation(); e.preventDefault(); dragged = false; }
    }, true);
    apply();
    return { zoomIn: function () { zoomBy(ZOOM_STEP); }, zoomOut: function () { zoomBy(1 / ZOOM_STEP); }, pan: pan, reset: reset };
  }

  function init() {
    var form = document.getElementById("labeling-form");
    if (!form) return;
    var editable = form.dataset.editable === "1";
    var rows = Array.prototype.slice.call(form.querySelectorAll(".q-row"));
    var versionInput = form.querySelector("[data-version]");
    var statusEl = document.querySelector("[data-save-status]");
    var errorsEl = document.querySelector("[data-errors]");
    var conflictEl = document.querySelector("[data-conflict-banner]");
    var image = document.getElementById("labeling-image");
    var blurButton = document.querySelector("[data-blur-button]");
    var frame = document.querySelector("[data-zoom-frame]");
    var zoom = image && frame ? setupZoom(image, frame, document.querySelector("[data-zoom-level]")) : null;
    var current = 0;
    var conflict = false;
    var dirty = false;
    var submitting = false;
    var timer = null;
    var chain = Promise.resolve();

    function setStatus(text) { if (statusEl) statusEl.textContent = text; }

    // data-save-state on the form: dirty -> saving -> saved (or conflict/error); tests and CSS read it.
    function setState(state) { form.dataset.saveState = state; }

    function showErrors(messages) {
      if (!errorsEl) return;
      var list = document.createElement("ul");
      messages.forEach(function (m) { var li = document.createElement("li"); li.textContent = m; list.appendChild(li); });
      errorsEl.replaceChildren(list);
      errorsEl.hidden = messages.length === 0;
    }

    function showConflict(message) {
      conflict = true;
      dirty = false;
      if (conflictEl) {
        conflictEl.querySelector("[data-conflict-message]").textContent = message;
        conflictEl.hidden = false;
      }
      setStatus("Not saved: the labeling changed elsewhere.");
    }

    function setCurrent(i) {
      if (!rows.length) return;
      current = Math.max(0, Math.min(rows.length - 1, i));
      rows.forEach(function (r, j) { r.classList.toggle("current", j === current); });
      rows[current].focus({ preventScroll: true });
      rows[current].scrollIntoView({ block: "nearest" });
    }

    function isAnswered(row) { return !!row.querySelector("input[type=radio]:checked"); }

    function missingRows() { return rows.filter(function (r) { return !isAnswered(r); }); }

    // Saves run one at a time; each sends the version the previous one returned.
    function scheduleSave(delay) {
      if (!editable || conflict) return;
      dirty = true;
      setState("dirty");
      clearTimeout(timer);
      timer = setTimeout(flush, delay);
    }

    function flush() {
      clearTimeout(timer);
      chain = chain.then(saveIfDirty);
      return chain;
    }

    function saveIfDirty() {
      if (!dirty || conflict) return Promise.resolve();
      dirty = false;
      setStatus("Saving…");
      setState("saving");
      return fetch(form.dataset.draftUrl, {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        keepalive: true,  // a reload or navigation right after an answer must not cancel its save
        headers: { Accept: "application/json", "X-Requested-With": "fetch" },
      }).then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (data) {
          if (response.ok) {
            versionInput.value = data.version;
            setStatus("Draft saved (" + data.answered + " of " + rows.length + " answered, version " + data.version + ").");
            if (!dirty) setState("saved");
          } else if (response.status === 409) {
            showConflict(data.error || "This labeling changed elsewhere; reload the page.");
            setState("conflict");
          } else {
            showErrors([data.error || "Not saved (HTTP " + response.status + ")."]);
            setStatus("Not saved.");
            setState("error");
          }
        });
      }).catch(function () {
        dirty = true;
        setState("error");
        setStatus("Not saved: no connection. Retrying…");
        timer = setTimeout(flush, 3000);
      });
    }

    function answer(row, value) {
      var input = row.querySelector('input[type=radio][value="' + value + '"]');
      if (!input || input.disabled) return false;
      input.checked = true;
      row.classList.remove("missing");
      if (!missingRows().length) showErrors([]);
      scheduleSave(0);
      return true;
    }

    // The suggestion row carries the value most models gave; a accepts it as this reviewer's own answer.
    function acceptSuggestion(row) {
      var suggestion = row.querySelector("[data-suggested-value]");
      if (!suggestion) return false;
      var value = suggestion.dataset.suggestedValue;
      return answer(row, value === "0.5" ? "0.5" : value);
    }

    function submit() {
      if (!editable || conflict || submitting) return;
      var missing = missingRows();
      if (missing.length) {
        rows.forEach(function (r) { r.classList.toggle("missing", !isAnswered(r)); });
        showErrors(["Answer every question before submitting. Missing (" + missing.length + "): " +
          missing.map(function (r) { return r.dataset.key; }).join(", ") + "."]);
        setCurrent(rows.indexOf(missing[0]));
        return;
      }
      // The pending draft save must land first, so the submit carries the newest version.
      flush().then(function () {
        if (conflict) return;
        submitting = true;
        setStatus("Submitting…");
        form.submit();
      });
    }

    function toggleBlur() {
      if (!image) return;
      var blurred = image.classList.toggle("blurred");
      image.alt = image.alt.replace(/\((blurred|revealed)\)$/, blurred ? "(blurred)" : "(revealed)");
      if (blurButton) {
        blurButton.textContent = (blurred ? "Reveal" : "Blur") + " (b)";
        blurButton.setAttribute("aria-pressed", blurred ? "false" : "true");
      }
    }

    // A draft with answers (or a rationale, note or flag) is work: skipping it asks first.
    function hasWork() {
      if (rows.some(isAnswered)) return true;
      return Array.prototype.some.call(form.querySelectorAll("input[type=text], textarea, select"), function (el) { return el.value.trim() !== ""; });
    }

    function confirmSkip() {
      if (!editable || !hasWork()) return true;
      return window.confirm("Skip this image? Your answers are kept, and you can undo the skip or reopen the image from the Label page.");
    }

    function skip() {
      var button = document.querySelector('[data-action="skip"]');
      if (button) button.click();
    }

    var skipForm = document.querySelector("[data-skip-form]");
    if (skipForm) skipForm.addEventListener("submit", function (e) {
      if (!confirmSkip()) { e.preventDefault(); return; }
      flush();  // the kept answers are the newest ones
    });

    document.querySelectorAll('[data-action="toggle-blur"]').forEach(function (el) {
      el.addEventListener("click", function (e) { e.preventDefault(); toggleBlur(); });
    });
    if (zoom) {
      var zoomActions = { "zoom-in": zoom.zoomIn, "zoom-out": zoom.zoomOut, "zoom-reset": zoom.reset };
      Object.keys(zoomActions).forEach(function (name) {
        document.querySelectorAll('[data-action="' + name + '"]').forEach(function (el) {
          el.addEventListener("click", function (e) { e.preventDefault(); zoomActions[name](); });
        });
      });
    }

    // Focus and the current row are one thing: whatever gets focus inside a row makes it current.
    function highlight(i) { current = i; rows.forEach(function (r, j) { r.classList.toggle("current", j === i); }); }
    rows.forEach(function (row, i) {
      row.addEventListener("click", function () { highlight(i); });
      row.addEventListener("focusin", function () { highlight(i); });
    });

    form.addEventListener("change", function (e) {
      if (e.target.matches("input[type=radio]")) e.target.closest(".q-row").classList.remove("missing");
      scheduleSave(e.target.matches("input[type=radio], select") ? 0 : 600);
    });
    form.addEventListener("input", function (e) {
      if (e.target.matches("input[type=text], textarea")) scheduleSave(800);
    });
    form.addEventListener("submit", function (e) {
      if (!submitting) { e.preventDefault(); submit(); }
    });
    window.addEventListener("pagehide", function () {
      // Last unsaved keystrokes: a fire-and-forget save; a stale version is refused by the server as usual.
      if (dirty && !conflict && navigator.sendBeacon) navigator.sendBeacon(form.dataset.draftUrl, new FormData(form));
    });

    document.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      var t = e.target;
      if (t.matches && t.matches("textarea, input[type=text], select")) {
        if (e.key === "Escape" || (e.key === "Enter" && t.matches("input[type=text]"))) {
          e.preventDefault();
          t.blur();
          setCurrent(current);
        }
        return;
      }
      // Never take a focused control's own keys: Enter/Space on a button or link, Space and arrows on an answer.
      if ((e.key === "Enter" || e.key === " ") && t.matches && t.matches("button, a, summary")) return;
      if (t.matches && t.matches("input[type=radio], input[type=checkbox]") &&
          (e.key === " " || e.key.indexOf("Arrow") === 0)) return;
      var row = rows[current];
      if (zoom && e.shiftKey && e.key.indexOf("Arrow") === 0) {
        e.preventDefault();
        var d = { ArrowLeft: [PAN_STEP, 0], ArrowRight: [-PAN_STEP, 0], ArrowUp: [0, PAN_STEP], ArrowDown: [0, -PAN_STEP] }[e.key];
        zoom.pan(d[0], d[1]);
        return;
      }
      if (zoom && (e.key === "+" || e.key === "=")) { e.preventDefault(); zoom.zoomIn(); return; }
      if (zoom && e.key === "-") { e.preventDefault(); zoom.zoomOut(); return; }
      if (zoom && e.key === "x") { e.preventDefault(); zoom.reset(); return; }
      if (e.key === "a" && row && editable) {
        e.preventDefault();
        if (acceptSuggestion(row) && current < rows.length - 1) setCurrent(current + 1);
        return;
      }
      switch (e.key) {
        case "ArrowDown": e.preventDefault(); setCurrent(current + 1); return;
        case "ArrowUp": e.preventDefault(); setCurrent(current - 1); return;
        case "Enter": case "s": e.preventDefault(); submit(); return;
        case "b": case " ": e.preventDefault(); toggleBlur(); return;
        case "k": e.preventDefault(); skip(); return;
        case "r": if (row && editable) { e.preventDefault(); row.querySelector("input[type=text]").focus(); } return;
        case "t": if (editable) { e.preventDefault(); form.querySelector("textarea[name=note]").focus(); } return;
        case "f": if (editable) { e.preventDefault(); form.querySelector("select[name=flag]").focus(); } return;
      }
      if (Object.prototype.hasOwnProperty.call(KEY_VALUES, e.key) && row) {
        e.preventDefault();
        if (answer(row, KEY_VALUES[e.key]) && current < rows.length - 1) setCurrent(current + 1);
      }
    });

    var firstMissing = rows.findIndex(function (r) { return r.classList.contains("missing"); });
    if (firstMissing < 0) firstMissing = rows.findIndex(function (r) { return !isAnswered(r); });
    setCurrent(firstMissing < 0 ? 0 : firstMissing);
    document.documentElement.dataset.labelingReady = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
