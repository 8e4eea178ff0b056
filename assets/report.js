// kvmark's report page: draws the figure descriptions in KVMARK (the same ones the
// PNG/SVG/PDF figures are drawn from) as uPlot charts. Hover shows values in each
// chart's legend, dragging across a timeline zooms it (double-click resets), a
// legend entry or an engine toggle in the header hides series.
(function () {
  "use strict";

  // For tests and the curious: how many panels exist and were drawn, and errors.
  var status = { panels: 0, rendered: 0, errors: [] };
  window.kvmarkReport = status;
  // Series shown across every chart (the engine toggles change it).
  status.visibleSeries = function () {
    var n = 0;
    charts.forEach(function (c) {
      c.u.series.forEach(function (s, i) { if (i > 0 && s.show) n++; });
    });
    return n;
  };

  var hidden = {};
  var charts = [];
  var DASH = { solid: null, dashed: [7, 5], dotted: [2, 4] };
  // Draw everything at once for small reports; past this many panels, each chart
  // is drawn when it scrolls into view.
  var EAGER_LIMIT = 80;

  function trim(v) {
    var a = Math.abs(v), s;
    if (a >= 100 || v === Math.round(v)) s = v.toFixed(0);
    else if (a >= 10) s = v.toFixed(1);
    else if (a >= 1) s = v.toFixed(2);
    else s = v.toFixed(3);
    if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }

  function short(v) {
    var a = Math.abs(v);
    if (a >= 1e12) return trim(v / 1e12) + "T";
    if (a >= 1e9) return trim(v / 1e9) + "G";
    if (a >= 1e6) return trim(v / 1e6) + "M";
    if (a >= 1e4) return trim(v / 1e3) + "k";
    return trim(v);
  }

  function bytes(v) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], i = 0;
    while (Math.abs(v) >= 1024 && i + 1 < units.length) { v /= 1024; i++; }
    return trim(v) + " " + units[i];
  }

  function fmt(unit, v) {
    if (v === null || v === undefined || !isFinite(v)) return "-";
    switch (unit) {
      case "nanos":
        if (Math.abs(v) >= 1e9) return trim(v / 1e9) + " s";
        if (Math.abs(v) >= 1e6) return trim(v / 1e6) + " ms";
        if (Math.abs(v) >= 1e3) return trim(v / 1e3) + " us";
        return trim(v) + " ns";
      case "bytes": return bytes(v);
      case "bytes_per_sec": return bytes(v) + "/s";
      case "percent": return short(v) + "%";
      case "nines":
        var q = (1 - Math.pow(10, -v)) * 100;
        return (v < 0.5 ? trim(q) : q.toFixed(Math.max(0, Math.round(v) - 2))) + "%";
      default: return short(v);
    }
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function markKind(mark) {
    if (mark === "bar") return "bar";
    return mark.line ? "line" : "points";
  }

  function markShape(mark) {
    if (mark.points) return mark.points.shape;
    if (mark.line) return mark.line.marker;
    return null;
  }

  function drawMarker(ctx, shape, x, y, r, color) {
    ctx.fillStyle = color;
    ctx.strokeStyle = color;
    ctx.beginPath();
    if (shape === "circle") {
      ctx.arc(x, y, r, 0, 2 * Math.PI);
      ctx.fill();
    } else if (shape === "triangle") {
      ctx.moveTo(x, y - r * 1.2);
      ctx.lineTo(x + r * 1.1, y + r * 0.8);
      ctx.lineTo(x - r * 1.1, y + r * 0.8);
      ctx.closePath();
      ctx.fill();
    } else if (shape === "square") {
      ctx.rect(x - r, y - r, 2 * r, 2 * r);
      ctx.fill();
    } else {
      ctx.lineWidth = 2;
      ctx.moveTo(x - r, y - r);
      ctx.lineTo(x + r, y + r);
      ctx.moveTo(x + r, y - r);
      ctx.lineTo(x - r, y + r);
      ctx.stroke();
    }
  }

  function clipped(u, fn) {
    var ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    fn(ctx);
    ctx.restore();
  }

  // Shaded spans (under the series) and marker lines with labels (over them).
  function drawSpans(u, panel) {
    if (!panel.spans) return;
    clipped(u, function (ctx) {
      panel.spans.forEach(function (s) {
        var a = u.valToPos(s.from, "x", true), b = u.valToPos(s.to, "x", true);
        ctx.fillStyle = "rgba(120,120,120,0.15)";
        ctx.fillRect(Math.min(a, b), u.bbox.top, Math.abs(b - a), u.bbox.height);
        ctx.fillStyle = "#555";
        ctx.font = 11 * devicePixelRatio + "px sans-serif";
        ctx.fillText(s.label, Math.min(a, b) + 3, u.bbox.top + 12 * devicePixelRatio);
      });
    });
  }

  function drawVLines(u, panel) {
    if (!panel.vlines) return;
    clipped(u, function (ctx) {
      panel.vlines.forEach(function (l, i) {
        var x = u.valToPos(l.x, "x", true);
        ctx.strokeStyle = "#666";
        ctx.lineWidth = 1;
        ctx.setLineDash([4, 4]);
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        ctx.setLineDash([]);
        if (l.label) {
          ctx.fillStyle = "#333";
          ctx.font = 11 * devicePixelRatio + "px sans-serif";
          ctx.fillText(l.label, x + 3, u.bbox.top + (12 + 12 * (i % 3)) * devicePixelRatio);
        }
      });
    });
  }

  function yPos(u, panel, v) {
    if (panel.y.scale === "log" && !(v > 0)) return null;
    return u.valToPos(v, "y", true);
  }

  // Bands, error bars, bars and markers of the panel's visible series.
  function drawMarks(u, panel, kept, slotX) {
    clipped(u, function (ctx) {
      kept.forEach(function (si, j) {
        var s = panel.series[si];
        if (!u.series[j + 1].show) return;
        var kind = markKind(s.mark), shape = markShape(s.mark);
        if (s.band && s.band.length > 1) {
          ctx.fillStyle = s.color + "2e";
          ctx.beginPath();
          s.band.forEach(function (b, k) {
            var x = u.valToPos(b[0], "x", true), y = yPos(u, panel, b[2]);
            if (y === null) return;
            if (k === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
          });
          s.band.slice().reverse().forEach(function (b) {
            var y = yPos(u, panel, b[1]);
            if (y !== null) ctx.lineTo(u.valToPos(b[0], "x", true), y);
          });
          ctx.closePath();
          ctx.fill();
        }
        var base = panel.y.scale === "log" ? u.scales.y.min : Math.max(0, u.scales.y.min);
        s.points.forEach(function (p) {
          if (p[1] === null) return;
          var x = slotX ? slotX(p[0], s.slot) : u.valToPos(p[0], "x", true);
          var y = yPos(u, panel, p[1]);
          if (y === null) return;
          if (kind === "bar") {
            var w = slotX.width();
            var y0 = u.valToPos(base, "y", true);
            ctx.fillStyle = s.color;
            ctx.fillRect(x - w / 2, Math.min(y, y0), w, Math.abs(y0 - y));
          } else if (shape) {
            drawMarker(ctx, shape, x, y, 4 * devicePixelRatio, s.color);
          }
        });
        (s.errors || []).forEach(function (b) {
          var x = slotX ? slotX(b[0], s.slot) : u.valToPos(b[0], "x", true);
          var lo = yPos(u, panel, b[1]), hi = yPos(u, panel, b[2]);
          if (lo === null || hi === null) return;
          var cap = 4 * devicePixelRatio;
          ctx.strokeStyle = "#000";
          ctx.lineWidth = 1;
          ctx.setLineDash([]);
          ctx.beginPath();
          ctx.moveTo(x, lo); ctx.lineTo(x, hi);
          ctx.moveTo(x - cap, lo); ctx.lineTo(x + cap, lo);
          ctx.moveTo(x - cap, hi); ctx.lineTo(x + cap, hi);
          ctx.stroke();
        });
      });
    });
  }

  function clean(panel, y) {
    if (y === null || y === undefined || !isFinite(y)) return null;
    if (panel.y.scale === "log" && y <= 0) return null;
    return y;
  }

  function axes(panel, category) {
    var x = {
      label: panel.x.label,
      values: function (u, vals) {
        return vals.map(function (v) { return category ? (panel.categories[v] || "") : fmt(panel.x.unit, v); });
      },
    };
    if (category) {
      x.splits = function () { return panel.categories.map(function (_, i) { return i; }); };
      if (panel.categories.length > 6) { x.rotate = -40; x.size = 80; }
    } else if (panel.x.unit === "count") {
      x.incrs = [1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 1e5, 1e6];
    } else if (panel.x.unit === "nines") {
      x.splits = function (u, ai, min, max) {
        var out = [];
        for (var v = Math.ceil(min); v <= max; v++) out.push(v);
        return out;
      };
    }
    var y = {
      label: panel.y.label,
      size: 72,
      values: function (u, vals) { return vals.map(function (v) { return fmt(panel.y.unit, v); }); },
    };
    return [x, y];
  }

  function yScale(panel) {
    if (panel.y.scale === "log") return { distr: 3, log: 10 };
    return {
      range: function (u, min, max) {
        var lo = Math.min(0, min === null ? 0 : min), hi = max === null ? 1 : max;
        if (hi <= lo) hi = lo + 1;
        return [lo, hi + (hi - lo) * 0.05];
      },
    };
  }

  function seriesOpts(panel, s) {
    var o = {
      label: s.label,
      stroke: s.color,
      show: !(s.engine && hidden[s.engine]),
      value: function (u, v) { return fmt(panel.y.unit, v); },
      points: { show: false },
      spanGaps: false,
    };
    if (markKind(s.mark) === "line") {
      o.width = s.mark.line.width;
      o.dash = DASH[s.mark.line.dash] || undefined;
    } else {
      o.paths = function () { return null; };
      o.fill = s.color;
    }
    return o;
  }

  // The colour of a heatmap cell: the scale of heat_color in src/plot/figure.rs.
  var HEAT_STOPS = [
    [0.0, [255, 245, 200]], [0.3, [253, 190, 90]], [0.55, [240, 100, 45]],
    [0.8, [180, 30, 80]], [1.0, [70, 10, 90]],
  ];
  function heatColor(count, max) {
    var t = max <= 1 ? 1 : Math.min(1, Math.max(0, Math.log(Math.max(1, count)) / Math.log(max)));
    var i = 0;
    while (i < HEAT_STOPS.length - 2 && HEAT_STOPS[i + 1][0] <= t) i++;
    var a = HEAT_STOPS[i], b = HEAT_STOPS[i + 1];
    var f = Math.min(1, Math.max(0, (t - a[0]) / (b[0] - a[0])));
    var c = [0, 1, 2].map(function (k) { return Math.round(a[1][k] + (b[1][k] - a[1][k]) * f); });
    return "rgb(" + c.join(",") + ")";
  }

  // A heatmap panel: columns of (bucket, count) pairs, painted in the draw hook over
  // axes fitted by one invisible series through two corners.
  function makeHeatmap(box, panel, width) {
    var h = panel.heatmap;
    var bucketY = function (b) { return Math.pow(10, b / h.per_decade); };
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    h.x.forEach(function (x, i) {
      x0 = Math.min(x0, x[0]); x1 = Math.max(x1, x[1]);
      for (var k = 0; k < h.counts[i].length; k += 2) {
        y0 = Math.min(y0, bucketY(h.counts[i][k])); y1 = Math.max(y1, bucketY(h.counts[i][k] + 1));
      }
    });
    var opts = {
      width: width,
      height: 300,
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false } },
      scales: { x: { time: false }, y: yScale(panel) },
      axes: axes(panel, false),
      series: [
        { label: panel.x.label },
        { label: "extent", paths: function () { return null; }, points: { show: false } },
      ],
      hooks: {
        draw: [function (u) {
          clipped(u, function (ctx) {
            h.x.forEach(function (x, i) {
              var xa = u.valToPos(x[0], "x", true), xb = u.valToPos(x[1], "x", true);
              var c = h.counts[i];
              for (var k = 0; k < c.length; k += 2) {
                var ya = u.valToPos(bucketY(c[k]), "y", true), yb = u.valToPos(bucketY(c[k] + 1), "y", true);
                ctx.fillStyle = heatColor(c[k + 1], h.max);
                // Half a pixel more each way, so neighbouring cells leave no seam.
                ctx.fillRect(Math.min(xa, xb), Math.min(ya, yb), Math.abs(xb - xa) + 0.5, Math.abs(yb - ya) + 0.5);
              }
            });
          });
        }],
      },
    };
    var u = new uPlot(opts, [[x0, x1], [y0, y1]], box);
    var entry = { u: u, engines: [] };
    charts.push(entry);
    status.rendered++;
    return entry;
  }

  function makeChart(box, panel, width) {
    if (panel.heatmap && panel.heatmap.x.length) return makeHeatmap(box, panel, width);
    var category = panel.x.scale === "category";
    var kept = [];
    panel.series.forEach(function (s, i) {
      if (s.points.some(function (p) { return p[0] !== null && clean(panel, p[1]) !== null; })) kept.push(i);
    });
    if (kept.length === 0) {
      box.appendChild(el("p", "empty", "no data in this panel"));
      return null;
    }
    var data, slotX = null;
    if (category) {
      var n = panel.categories.length;
      data = [panel.categories.map(function (_, i) { return i; })];
      kept.forEach(function (i) {
        var ys = new Array(n).fill(null);
        panel.series[i].points.forEach(function (p) { ys[Math.round(p[0])] = clean(panel, p[1]); });
        data.push(ys);
      });
    } else {
      var tables = kept.map(function (i) {
        var xs = [], ys = [];
        panel.series[i].points.forEach(function (p) {
          if (p[0] === null || (panel.x.scale === "log" && p[0] <= 0)) return;
          if (xs.length && p[0] <= xs[xs.length - 1]) return;
          xs.push(p[0]);
          ys.push(clean(panel, p[1]));
        });
        return [xs, ys];
      });
      data = tables.length === 1 ? tables[0] : uPlot.join(tables);
    }
    var opts = {
      width: width,
      height: 300,
      legend: { live: true },
      cursor: { drag: { x: !!panel.zoom, y: false, setScale: !!panel.zoom } },
      scales: {
        x: category
          ? { time: false, range: [-0.5, panel.categories.length - 0.5] }
          : { time: false, distr: panel.x.scale === "log" ? 3 : 1, log: 10 },
        y: yScale(panel),
      },
      axes: axes(panel, category),
      series: [{ label: panel.x.label, value: function (u, v) { return category ? (panel.categories[v] || "") : fmt(panel.x.unit, v); } }]
        .concat(kept.map(function (i) { return seriesOpts(panel, panel.series[i]); })),
      hooks: {
        drawAxes: [function (u) { drawSpans(u, panel); }],
        draw: [function (u) {
          if (category) {
            var slots = Math.max(1, panel.slots);
            slotX = function (x, slot) {
              var w = 0.8 / slots;
              return u.valToPos(x - 0.4 + (slot + 0.5) * w, "x", true);
            };
            slotX.width = function () {
              return Math.abs(u.valToPos(0.8 / slots, "x", true) - u.valToPos(0, "x", true)) * 0.92;
            };
          }
          drawMarks(u, panel, kept, slotX);
          drawVLines(u, panel);
        }],
      },
    };
    var u = new uPlot(opts, data, box);
    var entry = { u: u, engines: kept.map(function (i) { return panel.series[i].engine; }) };
    charts.push(entry);
    status.rendered++;
    return entry;
  }

  function buildToggles() {
    var host = document.getElementById("engines");
    if (!host || !KVMARK.engines.length) return;
    host.appendChild(el("span", "lead", "engines:"));
    KVMARK.engines.forEach(function (e) {
      var label = el("label", "toggle");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.addEventListener("change", function () {
        hidden[e.name] = !box.checked;
        charts.forEach(function (c) {
          c.engines.forEach(function (name, j) {
            if (name === e.name) c.u.setSeries(j + 1, { show: box.checked });
          });
        });
      });
      var swatch = el("span", "swatch");
      swatch.style.background = e.color;
      label.appendChild(box);
      label.appendChild(swatch);
      label.appendChild(document.createTextNode(e.name));
      host.appendChild(label);
    });
  }

  function build() {
    buildToggles();
    var host = document.getElementById("figures");
    var toc = document.getElementById("toc");
    var total = 0;
    KVMARK.figures.forEach(function (f) { total += f.panels.length; });
    status.panels = total;
    var lazy = total > EAGER_LIMIT && "IntersectionObserver" in window;
    var observer = lazy ? new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        if (!en.isIntersecting) return;
        observer.unobserve(en.target);
        en.target._draw();
      });
    }, { rootMargin: "300px" }) : null;
    KVMARK.figures.forEach(function (f, fi) {
      var sec = el("section", "figure");
      sec.id = "fig-" + f.name;
      sec.dataset.family = f.family;
      sec.appendChild(el("h3", null, f.title));
      var link = el("a", null, f.title);
      link.href = "#" + sec.id;
      toc.appendChild(link);
      var grid = el("div", "panels");
      sec.appendChild(grid);
      host.appendChild(sec);
      f.panels.forEach(function (p) {
        var box = el("div", "panel");
        box.appendChild(el("h4", null, p.title));
        grid.appendChild(box);
        var width = p.x.scale === "category"
          ? Math.max(540, Math.min(1600, p.categories.length * Math.max(1, p.slots) * 14 + 140))
          : 540;
        box._draw = function () {
          try {
            makeChart(box, p, width);
          } catch (err) {
            status.errors.push(f.name + ": " + p.title + ": " + err);
            box.appendChild(el("p", "error", "this chart could not be drawn: " + err));
          }
        };
        if (lazy) observer.observe(box); else box._draw();
      });
    });
    if (!KVMARK.figures.length) host.appendChild(el("p", "empty", "no figures: the run recorded nothing to draw"));
  }

  try {
    build();
  } catch (err) {
    status.errors.push(String(err));
    throw err;
  }
})();
