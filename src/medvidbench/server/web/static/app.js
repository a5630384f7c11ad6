// A little behaviour on top of pages that work without it: theme, live status, compare chart.
"use strict";

(function theme() {
  const saved = localStorage.getItem("mvb-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("theme");
    if (!button) return;
    button.addEventListener("click", () => {
      const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
      const now = document.documentElement.dataset.theme || (dark ? "dark" : "light");
      const next = now === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      localStorage.setItem("mvb-theme", next);
    });
  });
})();

document.addEventListener("DOMContentLoaded", () => {
  // Submission page: follow the status until it is final, then show the new page.
  const timeline = document.getElementById("timeline");
  if (timeline && timeline.dataset.final === "no") {
    const id = timeline.dataset.submission;
    const seen = timeline.dataset.status;
    const poll = async () => {
      try {
        const response = await fetch(`/api/v1/submissions/${id}`, {headers: {Accept: "application/json"}});
        if (response.ok) {
          const body = await response.json();
          if (body.status !== seen) { window.location.reload(); return; }
        }
      } catch (e) { /* network hiccup: try again */ }
      setTimeout(poll, 1000);
    };
    setTimeout(poll, 1000);
  }

  // Compare page: typing filters the list at once (the Find button does it without JS);
  // the chart is drawn from the benchmark's API.
  const filter = document.getElementById("pick-filter");
  if (filter) {
    const apply = () => {
      const needle = filter.value.trim().toLowerCase();
      document.querySelectorAll("#pick-list label.pick").forEach((label) => {
        const ticked = label.querySelector("input").checked;
        label.hidden = Boolean(needle) && !ticked && !label.dataset.search.includes(needle);
      });
    };
    filter.addEventListener("input", apply);
    filter.addEventListener("keydown", (e) => { if (e.key === "Enter") e.preventDefault(); });
    apply();
    // At most 4 ticked: the rest of the boxes wait until one is unticked; the count says so.
    const boxes = Array.from(document.querySelectorAll("#pick-list input[name=pick]"));
    const count = document.getElementById("pick-count");
    const limit = () => {
      const ticked = boxes.filter((b) => b.checked).length;
      boxes.forEach((b) => { b.disabled = !b.checked && ticked >= 4; });
      if (count) count.textContent = `${ticked} ticked${ticked >= 4 ? " (the most)" : ""}`;
    };
    boxes.forEach((b) => b.addEventListener("change", limit));
    limit();
  }
  const chart = document.getElementById("chart");
  if (chart && window.Plotly && chart.dataset.entries) {
    const slug = encodeURIComponent(chart.dataset.slug);
    fetch(`/api/v1/benchmarks/${slug}/compare?entries=${encodeURIComponent(chart.dataset.entries)}`)
      .then((r) => r.json())
      .then((body) => {
        // The server puts every value on 0-1 with 1 the best (from the metric table), so the
        // chart names no metric and knows no scale.
        const keys = body.metrics;
        // Plotly reads its text as markup (links, styles, line breaks): every name is given as
        // text, its markup characters written as entities, which Plotly shows as themselves.
        const plain = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
        const names = keys.map((k) => plain(body.columns[k] || k));
        // Each bar says where its numbers come from, as the table's headers do (issue 22).
        const demo = chart.dataset.demo === "yes";
        const origin = (e) => (e.submission_id == null ? "reported" : demo ? "scored on the demo set" : "scored here");
        const traces = body.entries.map((e) => ({
          type: "bar", name: plain(`${e.model_name} (${origin(e)})`), x: names,
          y: keys.map((k) => e.normalised[k] ?? null),
        }));
        // The legend sits above the plot, where it cannot cover the axis titles (issue 22).
        window.Plotly.newPlot(chart, traces, {barmode: "group",
          xaxis: {title: {text: "metric"}, automargin: true},
          yaxis: {range: [0, 1], title: {text: "normalised score (1 = best)"}, automargin: true},
          margin: {t: 70, b: 40, l: 60, r: 10},
          legend: {orientation: "h", x: 0, y: 1.02, xanchor: "left", yanchor: "bottom"}},
          {responsive: true, displaylogo: false});
      });
  }
});

// ---- Scroll boxes (issue 22): a table or code block wider than the screen scrolls inside its
// own box, never the page. A box that overflows can be focused (so the keyboard can scroll
// it), is a named region, and says above itself that it scrolls; one that fits says nothing.
(function scrollBoxes() {
  const wrapTables = () => {
    document.querySelectorAll("main table").forEach((table) => {
      if (table.closest(".scroll")) return;
      const box = document.createElement("div");
      box.className = "scroll";
      table.before(box);
      box.append(table);
    });
  };
  const hintFor = (box) => {
    let hint = box.previousElementSibling;
    if (!hint || !hint.classList.contains("scroll-hint")) {
      hint = document.createElement("p");
      hint.className = "scroll-hint";
      hint.setAttribute("aria-hidden", "true"); // the region's name says it to screen readers
      hint.textContent = "⇆ Wider than the screen: scroll sideways";
      box.before(hint);
    }
    return hint;
  };
  const nameOf = (box) => {
    const caption = box.querySelector("caption");
    let heading = box.previousElementSibling;
    while (heading && !/^H[1-6]$/.test(heading.tagName)) heading = heading.previousElementSibling;
    return box.dataset.label || (caption && caption.textContent.trim())
      || (heading && heading.textContent.trim()) || (box.tagName === "PRE" ? "Code" : "Table");
  };
  const mark = () => {
    document.querySelectorAll("main .scroll, main pre").forEach((box) => {
      if (box.tagName === "PRE" && box.closest(".scroll")) return; // its table's box scrolls
      const wide = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("scrolls", wide);
      if (wide || box.classList.contains("scroll")) hintFor(box).hidden = !wide;
      if (wide) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", `${nameOf(box)} (scrolls sideways)`);
      }
    });
  };
  document.addEventListener("DOMContentLoaded", () => { wrapTables(); mark(); });
  window.addEventListener("resize", () => { wrapTables(); mark(); });
  window.addEventListener("load", mark);
})();

// ---- Boards (issue 22): the filters and the column chooser apply as they change, in place
// (the Apply button does the same without JS); the address keeps what is shown.
(function liveBoard() {
  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("board-filters");
    if (!form) return;
    const button = document.getElementById("apply-filters");
    if (button) button.hidden = true;
    let timer = null;
    let latest = 0;
    const apply = async () => {
      // The default columns need no mention in the address.
      const boxes = [...form.querySelectorAll("input[name=col]")];
      const usual = boxes.every((box) => box.checked === (box.dataset.default === "yes"));
      const query = new URLSearchParams();
      for (const [k, v] of new FormData(form)) if (v && !(usual && k === "col")) query.append(k, v);
      const qs = query.toString();
      const url = qs ? `${form.action}?${qs}` : form.action;
      const ticket = ++latest;
      try {
        const response = await fetch(url, {headers: {Accept: "text/html"}});
        if (ticket !== latest) return; // a newer change is on its way
        const doc = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = doc.getElementById("board-results");
        if (!response.ok || !fresh) throw new Error(`board answered ${response.status}`);
        document.getElementById("board-results").replaceWith(fresh);
        const summary = doc.querySelector("#column-chooser summary");
        if (summary) document.querySelector("#column-chooser summary").textContent = summary.textContent;
        history.replaceState(null, "", url);
        window.dispatchEvent(new Event("resize")); // the scroll boxes measure themselves again
      } catch (e) {
        window.location.assign(url); // the server's page, as without JS
      }
    };
    form.addEventListener("change", (e) => {
      if (e.target.name === "q") return; // typed: handled on input
      if (e.target.name === "col" && !form.querySelector("input[name=col]:checked")) {
        e.target.checked = true; // at least one column stays
        return;
      }
      apply();
    });
    form.addEventListener("input", (e) => {
      if (e.target.name !== "q") return;
      clearTimeout(timer);
      timer = setTimeout(apply, 250);
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      clearTimeout(timer);
      apply();
    });
  });
})();
