/* The dashboard's charts and a campaign's sends per step (Chart.js, vendor/chart.js/), from the numbers the page
   embeds as JSON; redrawn in the theme's colours when the admin's light/dark switch changes it. */
"use strict";
(function () {
  var source = document.getElementById("dashboard-data"), steps = document.getElementById("funnel-data");
  if (!(source || steps) || !window.Chart) { return; }
  var data = source ? JSON.parse(source.textContent) : null;
  var funnel = steps ? JSON.parse(steps.textContent) : null;
  var SERIES = {clicks: "#3b82f6", leads: "#f59e0b", sales: "#10b981", revenue: "#8b5cf6"};
  var STEPS = ["#3b82f6", "#8b5cf6", "#f59e0b", "#10b981", "#ec4899", "#14b8a6", "#64748b"];
  var charts = [];

  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

  function options(money) {
    var text = css("--body-quiet-color") || "#666", grid = css("--hairline-color") || "#ddd";
    return {
      responsive: true, maintainAspectRatio: false, animation: false,
      interaction: {mode: "index", intersect: false},
      plugins: {legend: {labels: {color: text, boxWidth: 12}}},
      scales: {
        x: {ticks: {color: text, maxRotation: 0, autoSkip: true, maxTicksLimit: window.innerWidth < 600 ? 4 : 10}, grid: {color: grid}},
        y: {beginAtZero: true, ticks: {color: text, precision: money ? undefined : 0}, grid: {color: grid}}
      }
    };
  }

  function line(name, values) {
    return {label: name.charAt(0).toUpperCase() + name.slice(1), data: values, borderColor: SERIES[name],
            backgroundColor: SERIES[name] + "33", pointRadius: values.length > 45 ? 0 : 2, tension: 0.25, fill: false};
  }

  function draw() {
    charts.forEach(function (chart) { chart.destroy(); });
    charts = [];
    if (funnel) {
      var sets = funnel.steps.map(function (step, i) {
        return {label: step.label, data: step.data, backgroundColor: STEPS[i % STEPS.length]};
      });
      var stacked = options(false);
      stacked.scales.x.stacked = true;
      stacked.scales.y.stacked = true;
      charts.push(new Chart(document.getElementById("chart-steps"), {type: "bar", options: stacked,
        data: {labels: funnel.labels, datasets: sets}}));
    }
    if (!data) { return; }
    var labels = data.labels;  // 2026-03-01: the back office's one way of writing a day
    var counts = document.getElementById("chart-counts");
    if (counts) {
      charts.push(new Chart(counts, {type: "line", options: options(false), data: {labels: labels, datasets: [
        line("clicks", data.clicks), line("leads", data.leads), line("sales", data.sales)]}}));
    }
    var revenue = document.getElementById("chart-revenue");
    if (revenue && data.currency) {
      var set = line("revenue", data.revenue);
      set.label = "Net revenue (" + data.currency + ")";
      set.fill = true;
      charts.push(new Chart(revenue, {type: "line", options: options(true), data: {labels: labels, datasets: [set]}}));
    }
  }

  draw();
  new MutationObserver(draw).observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", draw);
})();
