// Draws the charts of a tierzero page (tools/tierzero/html_page.h): each
// entry of the page's "tz-charts" JSON is an ECharts option for the
// element of the same id. No network: ECharts is inlined before this file.
// window.tierzeroCharts lists the charts drawn, with the number of data
// points each should hold (the browser test compares them with ECharts').
(function () {
  'use strict';
  function draw() {
    const specs = JSON.parse(document.getElementById('tz-charts').textContent);
    window.tierzeroCharts = specs.map(function (spec) {
      const chart = echarts.init(document.getElementById(spec.id), null, { renderer: 'canvas' });
      spec.option.animation = false;
      chart.setOption(spec.option);
      return { id: spec.id, marks: spec.marks, chart: chart };
    });
    window.addEventListener('resize', function () {
      window.tierzeroCharts.forEach(function (c) { c.chart.resize(); });
    });
  }
  document.addEventListener('DOMContentLoaded', draw);
})();
