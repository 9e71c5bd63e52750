// Draws the charts of a tierzero page (tools/tierzero/html_page.h): each
// entry of the page's "tz-charts" JSON is an ECharts option for the
// element of the same id. No network: ECharts is inlined before this file.
// window.tierzeroCharts lists the charts drawn, with the number of data
// points each should hold (the browser test compares them with ECharts').
// A legend wraps onto as many rows as its items need; the plot starts below
// its last row. A vertical value axis's name stands clear of its widest
// tick label (their width depends on the data: "120,000" is wider than "6").
(function () {
  'use strict';
  const kGapBelowLegend = 14;  // px between the legend's last row and the plot
  const kLabelMargin = 8;      // ECharts' default gap between an axis line and its tick labels
  const kGapBeforeName = 12;   // px between the widest tick label and the axis name

  // Moves the plot's top below the legend as drawn (its rows depend on the chart's width).
  function fitLegend(chart, top) {
    const legend = chart.getModel().getComponent('legend');
    if (!legend) return;
    const group = chart.getViewOfComponentModel(legend).group;
    const box = group.getBoundingRect().clone();
    if (group.transform) box.applyTransform(group.transform);
    chart.setOption({ grid: { top: Math.max(top, Math.ceil(box.y + box.height + kGapBelowLegend)) } });
  }

  // Moves each vertical value axis's name beyond its widest tick label as drawn.
  function fitAxisNames(chart) {
    const context = document.createElement('canvas').getContext('2d');
    const updates = [];
    chart.getModel().eachComponent('yAxis', function (axisModel) {
      const axis = axisModel.axis;
      if (!axisModel.get('name') || axis.type === 'category') {
        updates.push({});
        return;
      }
      context.font = axisModel.getModel('axisLabel').getFont();
      let widest = 0;
      axis.getViewLabels().forEach(function (l) { widest = Math.max(widest, context.measureText(l.formattedLabel).width); });
      updates.push({ nameGap: Math.max(axisModel.get('nameGap'), Math.ceil(widest + kLabelMargin + kGapBeforeName)) });
    });
    if (updates.length) chart.setOption({ yAxis: updates });
  }

  function draw() {
    const specs = JSON.parse(document.getElementById('tz-charts').textContent);
    window.tierzeroCharts = specs.map(function (spec) {
      const chart = echarts.init(document.getElementById(spec.id), null, { renderer: 'canvas' });
      spec.option.animation = false;
      chart.setOption(spec.option);
      const top = spec.option.grid ? spec.option.grid.top : 0;
      fitLegend(chart, top);
      fitAxisNames(chart);
      return { id: spec.id, marks: spec.marks, chart: chart, top: top };
    });
    window.addEventListener('resize', function () {
      window.tierzeroCharts.forEach(function (c) {
        c.chart.resize();
        fitLegend(c.chart, c.top);
        fitAxisNames(c.chart);
      });
    });
  }
  document.addEventListener('DOMContentLoaded', draw);
})();
