// The gateway's live page: polls /live/data about twice a second and draws each feature's status with uPlot.
// Field names follow the modules' Status JSON; the older names are read too, and a field that is missing draws
// nothing (a gap) instead of throwing.
(function () {
  'use strict';

  var POLL_MS = 500;
  var MAX_SERIES = 12; // upstreams or triggers drawn per chart; more would be unreadable
  var COLORS = ['#2f6fdf', '#d9480f', '#2b8a3e', '#862e9c', '#e67700', '#0b7285', '#c2255c', '#5c940d',
    '#364fc7', '#a61e4d', '#087f5b', '#5f3dc4'];
  var CHART_IDS = ['chart-loadshed-load', 'chart-loadshed-rate', 'chart-throttle-window', 'chart-throttle-rate',
    'chart-throttle-triggers', 'chart-upstreampick-rtt', 'chart-upstreampick-picks', 'chart-rebalance'];

  // WINDOWS are the spans the charts can show, in seconds; the first is the default. A chart shows the newest
  // WINDOW seconds, or everything held while that is less: a short run fills the width, whenever it happened.
  var WINDOWS = [60, 180];
  // AXIS_FONT is the time axis's font, also used to measure its labels; TIME_LABEL_GAP the least room between two.
  var AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  var TIME_LABEL_GAP = 16;

  var state = {
    samples: [], // the sample objects, oldest first
    times: [], // each sample's time in Unix seconds (uPlot's x)
    last: 0, // seq of the newest sample held
    capacity: 360,
    window: WINDOWS[0], // seconds shown
    charts: {}, // chart id -> {key, u}
    legend: {} // chart id -> per-series, per-point legend text, read by the series' value functions
  };

  // What a browser test reads.
  // xLabels: per chart, the time labels drawn, each {text, left, right} in CSS pixels; xRange: per chart, the
  // [min, max] of its time scale; span: the seconds between the oldest and the newest sample held.
  var live = window.fiberguardLive = {samples: 0, points: {}, shedding: false, window: state.window, span: 0,
    xLabels: {}, xRange: {}};
  CHART_IDS.forEach(function (id) { live.points[id] = 0; });

  // ---- reading the JSON defensively

  function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
  function obj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null; }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function str(v) { return typeof v === 'string' ? v : ''; }

  // first returns o's first field among names that is present: today's name and the newer one.
  function first(o, names) {
    if (!o) return undefined;
    for (var i = 0; i < names.length; i++) {
      if (o[names[i]] !== undefined && o[names[i]] !== null) return o[names[i]];
    }
    return undefined;
  }

  function feature(s, name) {
    var st = obj(s && s.status);
    return st ? obj(st[name]) : null;
  }

  // column maps every sample through fn; a throw or a non-number becomes a gap.
  function column(fn) {
    return state.samples.map(function (s, i) {
      try { return num(fn(s, i)); } catch (e) { return null; }
    });
  }

  // rate turns a cumulative counter into a per-second rate since the previous sample at least MIN_RATE_SECONDS
  // older: a gateway starved of CPU can take two samples a millisecond apart, and a rate over that would be
  // noise. A counter that went down (a restarted feature) or is missing on either side gives a gap.
  var MIN_RATE_SECONDS = 0.25;
  function rate(counter) {
    var values = column(counter);
    return values.map(function (v, i) {
      if (v === null) return null;
      for (var j = i - 1; j >= 0; j--) {
        var dt = state.times[i] - state.times[j];
        if (dt < MIN_RATE_SECONDS) continue;
        var dv = v - values[j];
        return values[j] !== null && dv >= 0 ? dv / dt : null;
      }
      return null;
    });
  }

  // names lists the distinct names of the items list(s) returns, in order of first appearance.
  function names(list, nameOf) {
    var seen = {}, out = [];
    state.samples.forEach(function (s) {
      var items;
      try { items = arr(list(s)); } catch (e) { items = []; }
      items.forEach(function (it) {
        var n = str(nameOf(obj(it) || {}));
        if (n && !seen[n] && out.length < MAX_SERIES) { seen[n] = true; out.push(n); }
      });
    });
    return out;
  }

  function find(items, field, name) {
    items = arr(items);
    for (var i = 0; i < items.length; i++) {
      var it = obj(items[i]);
      if (it && it[field] === name) return it;
    }
    return null;
  }

  function latest(name) {
    for (var i = state.samples.length - 1; i >= 0; i--) {
      var f = feature(state.samples[i], name);
      if (f) return f;
    }
    return null;
  }

  function fixed(v, digits) { return num(v) === null ? '–' : v.toFixed(digits); }

  // ---- charts

  function chartHeight() { return window.innerWidth < 600 ? 170 : 210; }

  function chartWidth(el) { return Math.max(200, Math.floor(el.clientWidth || 300)); }

  // ---- the time axis: wall-clock labels that never overlap, over the newest state.window seconds

  function pad(n) { return n < 10 ? '0' + n : String(n); }

  // clock is a Unix time as HH:MM:SS of the browser's time zone: no date (the page shows minutes, not days).
  function clock(t) {
    var d = new Date(t * 1000);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  var measure = null;
  function textWidth(text) {
    if (!measure) {
      measure = document.createElement('canvas').getContext('2d');
      measure.font = AXIS_FONT;
    }
    return measure.measureText(text).width;
  }

  // timeAxis labels each tick with its clock time, asking uPlot for ticks at least one label and a gap apart,
  // and records what it drew for the browser test.
  function timeAxis(id) {
    return {
      font: AXIS_FONT,
      // uPlot takes the smallest step whose labels fit, and a span of L seconds holds at least L/step - 1 of them.
      // Each step here is at most 1.67 times the one before, so that any chart at least 3.4 labels wide (about
      // 240 px: a phone) shows two or more as soon as the labels fit: with steps 2 then 5, a 300 px chart of
      // 9.5 s took 5 s steps and showed one label when the span fell between two.
      incrs: [1, 2, 3, 4, 5, 6, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1800, 3600],
      space: function () { return Math.ceil(textWidth('00:00:00')) + TIME_LABEL_GAP; },
      values: function (u, splits) {
        var texts = splits.map(function (t) { return clock(t); });
        live.xLabels[id] = texts.map(function (text, k) {
          var x = u.valToPos(splits[k], 'x'), w = textWidth(text);
          return {text: text, left: x - w / 2, right: x + w / 2};
        });
        return texts;
      }
    };
  }

  // xRange shows the newest state.window seconds of the samples, or all of them while they span less.
  function xRange(id) {
    return function (u, min, max) {
      var n = state.times.length;
      if (n === 0) return [min, max];
      var hi = state.times[n - 1], lo = Math.max(state.times[0], hi - state.window);
      if (hi <= lo) lo = hi - 1;
      live.xRange[id] = [lo, hi];
      return [lo, hi];
    };
  }

  // newest returns the index of the newest point of series si that has a value, or null.
  function newest(u, si) {
    var d = u.data[si] || [];
    for (var i = d.length - 1; i >= 0; i--) {
      if (d[i] !== null && d[i] !== undefined) return i;
    }
    return null;
  }

  // current makes a legend show the newest value while the cursor is off the chart (on a phone: always), and
  // the value under the cursor while it is on it.
  function current(fmt) {
    return function (u, v, si, idx) {
      if (idx === null || idx === undefined) {
        idx = newest(u, si);
        v = idx === null ? null : u.data[si][idx];
      }
      return fmt(u, v, si, idx);
    };
  }

  // countPoints is how many x positions have a value in at least one series.
  function countPoints(cols) {
    var n = 0;
    for (var i = 0; i < state.times.length; i++) {
      for (var k = 0; k < cols.length; k++) {
        if (cols[k][i] !== null && cols[k][i] !== undefined) { n++; break; }
      }
    }
    return n;
  }

  function clearChart(id, message) {
    var c = state.charts[id];
    if (c) { c.u.destroy(); delete state.charts[id]; }
    var el = document.getElementById(id);
    if (el && message !== undefined) {
      el.textContent = '';
      var p = document.createElement('div');
      p.className = 'empty';
      p.textContent = message;
      el.appendChild(p);
    }
    live.points[id] = 0;
  }

  // draw shows cols over the samples' times in chart id, creating the chart (or recreating it when spec.key,
  // which names its series, changed) and otherwise only replacing its data.
  function draw(id, spec, cols) {
    var el = document.getElementById(id);
    if (!el) return;
    var points = countPoints(cols);
    if (cols.length === 0 || points === 0) {
      clearChart(id, spec.empty || 'no data yet');
      return;
    }
    if (typeof uPlot !== 'function') {
      clearChart(id, 'the chart library did not load');
      return;
    }
    var data = [state.times].concat(cols);
    var c = state.charts[id];
    if (c && c.key !== spec.key) { clearChart(id); c = null; }
    if (!c) {
      el.textContent = '';
      var scales = {x: {time: true, range: xRange(id)}};
      for (var k in spec.scales || {}) scales[k] = spec.scales[k];
      var opts = {
        width: chartWidth(el),
        height: chartHeight(),
        series: [{label: 'time', value: current(function (u, v) { return num(v) === null ? '–' : clock(v); })}]
          .concat(spec.series),
        axes: [timeAxis(id)].concat((spec.axes || valueAxes).slice(1)),
        scales: scales,
        legend: {show: true}
      };
      c = state.charts[id] = {key: spec.key, u: new uPlot(opts, data, el)};
    } else {
      c.u.setData(data);
    }
    // New data leaves the legend as it was; while the cursor is off the chart it shows the newest values.
    if (c.u.cursor.idx === null || c.u.cursor.idx === undefined) c.u.setLegend({idx: null});
    live.points[id] = points;
  }

  function line(label, color, extra) {
    var s = {label: label, stroke: color, width: 1.5, spanGaps: false, points: {show: false}};
    for (var k in extra || {}) s[k] = extra[k];
    if (s.value) s.value = current(s.value);
    return s;
  }

  // legendText makes a series' legend show state.legend[id][series][point] when that is set.
  function legendText(id, fallback) {
    return function (u, v, si, idx) {
      var t = state.legend[id] && state.legend[id][si - 1];
      if (idx !== null && idx !== undefined && t && t[idx]) return t[idx];
      return fallback(u, v, si, idx);
    };
  }

  // digits is a legend value: v with d decimals.
  function digits(d) { return function (u, v) { return num(v) === null ? '–' : v.toFixed(d); }; }

  // percent is a legend value: a fraction as a whole percentage.
  function percent(u, v) { return num(v) === null ? '–' : Math.round(v * 100) + '%'; }

  // fromZero keeps 0 at the bottom and at least top at the top.
  function fromZero(top) {
    return function (u, min, max) { return [0, Math.max(top, num(max) || 0) * 1.05]; };
  }

  // fitLabels sizes a y axis to its longest tick label, so "10,000" is not clipped.
  function fitLabels(u, values) {
    var longest = (values || []).reduce(function (w, v) { return Math.max(w, String(v).length); }, 3);
    return 20 + 7 * longest;
  }

  var valueAxes = [{}, {size: fitLabels}];

  // ---- features

  function renderLoadshed() {
    var ls = function (s) { return feature(s, 'loadshed'); };
    var prob = column(function (s) { return ls(s).probability; });
    // The default signal reports its readings: the CPU used (the first) and the waits for a CPU (the rest, whose
    // highest is drawn). Its load is the share it settled on, placed on the band, or below Lower the highest
    // reading: drawn as such, a goroutine waking at idle would look like an overload starting.
    var readings = function (s) { return arr(ls(s).readings); };
    var withReadings = state.samples.some(function (s) {
      try { return readings(s).length > 1; } catch (e) { return false; }
    });
    var f = latest('loadshed');
    var target = f && /^settled at ([0-9.]+) /.exec(str(f.signal));
    if (withReadings) {
      var series = [
        line('CPU used', COLORS[0], {width: 2, value: percent}),
        line('wait for a CPU', COLORS[3], {value: digits(2)}),
        line('shed', COLORS[1], {width: 2, value: percent}),
        line('critical shed', COLORS[4], {value: percent})
      ];
      var cols = [
        column(function (s) { return obj(readings(s)[0]).load; }),
        column(function (s) {
          var rest = readings(s).slice(1).map(function (r) { return num(obj(r) && r.load); });
          return rest.length && rest.every(function (v) { return v !== null; }) ? Math.max.apply(null, rest) : null;
        }),
        prob,
        column(function (s) { return ls(s).critical_probability; })
      ];
      if (target) {
        var t = +target[1];
        series.push(line('CPU target', '#8a8f99', {dash: [4, 4], value: percent}));
        cols.push(column(function (s) { return ls(s) && num(ls(s).load) !== null ? t : null; }));
      }
      draw('chart-loadshed-load', {key: 'readings' + (target ? ':' + target[1] : ''), series: series,
        scales: {y: {range: fromZero(1)}}}, cols);
    } else {
      // A custom signal: its load on the Lower/Upper band.
      var band = function (field, def) {
        return function (s) {
          var g = ls(s);
          if (!g || num(g.load) === null) return null;
          var v = num(g[field]);
          return v === null ? def : v;
        };
      };
      draw('chart-loadshed-load', {
        key: 'load',
        series: [
          line('load', COLORS[0], {width: 2, value: digits(3)}),
          line('Lower', '#8a8f99', {dash: [4, 4], value: digits(2)}),
          line('Upper', '#5b6070', {dash: [4, 4], value: digits(2)}),
          line('shed', COLORS[1], {value: percent}),
          line('critical shed', COLORS[4], {value: percent})
        ],
        scales: {y: {range: fromZero(1)}}
      }, [
        column(function (s) { return ls(s).load; }),
        column(band('lower', 0.90)),
        column(band('upper', 0.95)),
        prob,
        column(function (s) { return ls(s).critical_probability; })
      ]);
    }

    var rejected = rate(function (s) { return first(ls(s), ['rejected', 'shed']); });
    draw('chart-loadshed-rate', {
      key: 'rate',
      series: [
        line('admitted/s', COLORS[2], {value: digits(1)}),
        line('rejected/s', COLORS[1], {width: 2, value: digits(1)}),
        line('critical admitted/s', COLORS[5], {dash: [6, 3], value: digits(1)}),
        line('critical rejected/s', COLORS[6], {dash: [6, 3], value: digits(1)})
      ],
      axes: valueAxes,
      scales: {y: {range: fromZero(1)}}
    }, [
      rate(function (s) { return ls(s).admitted; }),
      rejected,
      rate(function (s) { return ls(s).critical_admitted; }),
      rate(function (s) { return first(ls(s), ['critical_rejected', 'critical_shed']); })
    ]);

    if (prob.some(function (p) { return p !== null && p > 0; }) ||
        rejected.some(function (r) { return r !== null && r > 0; })) {
      live.shedding = true;
    }

    var cpu = f && obj(arr(f.readings)[0]);
    summary('loadshed', f ? [
      cpu && num(cpu.load) !== null ? 'CPU used ' + percent(null, cpu.load) : 'load ' + fixed(f.load, 3),
      'shedding ' + percent(null, f.probability),
      f.dry_run ? 'dry run: counts, rejects nothing' : ''
    ] : []);
  }

  function renderThrottle() {
    var th = function (s) { return feature(s, 'throttle'); };
    draw('chart-throttle-window', {
      key: 'window',
      series: [
        line('window', COLORS[0], {width: 2, value: digits(0)}),
        line('in flight', COLORS[2], {value: digits(0)}),
        line('min', '#8a8f99', {dash: [4, 4], value: digits(0)}),
        line('max', '#5b6070', {dash: [4, 4], value: digits(0)})
      ],
      scales: {y: {range: fromZero(1)}}
    }, [
      column(function (s) { return th(s).window; }),
      column(function (s) { return th(s).in_flight; }),
      column(function (s) { return th(s).window_min; }),
      column(function (s) { return th(s).window_max; })
    ]);

    draw('chart-throttle-rate', {
      key: 'rate',
      series: [
        line('admitted/s', COLORS[2], {value: digits(1)}),
        line('rejected/s', COLORS[1], {width: 2, value: digits(1)})
      ],
      axes: valueAxes,
      scales: {y: {range: fromZero(1)}}
    }, [
      rate(function (s) { return th(s).admitted; }),
      rate(function (s) { return th(s).rejected; })
    ]);

    // One row per trigger: the line sits on the row while quiet and rises while firing.
    var triggers = function (s) { return first(th(s), ['triggers', 'signals']); };
    var list = names(triggers, function (t) { return t.name; });
    var id = 'chart-throttle-triggers';
    var verdicts = [];
    var cols = list.map(function (name, k) {
      var text = [];
      verdicts.push(text);
      return column(function (s, i) {
        var t = find(triggers(s), 'name', name);
        if (!t || typeof t.firing !== 'boolean') return null;
        text[i] = (t.firing ? 'firing' : 'quiet') + (t.verdict ? ': ' + str(t.verdict) : '');
        return k + (t.firing ? 0.7 : 0);
      });
    });
    state.legend[id] = verdicts;
    var paths = typeof uPlot === 'function' && uPlot.paths && uPlot.paths.stepped ?
      uPlot.paths.stepped({align: 1}) : undefined;
    var widest = list.reduce(function (w, n) { return Math.max(w, n.length); }, 4);
    draw(id, {
      key: 'triggers:' + list.join('\u0000'),
      empty: 'no triggers in the status',
      series: list.map(function (name, k) {
        return line(name, COLORS[k % COLORS.length], {width: 2, paths: paths, value: legendText(id, digits(0))});
      }),
      axes: [{}, {
        size: Math.min(170, 24 + 8 * widest),
        splits: function () { return list.map(function (_, k) { return k; }); },
        values: function (u, splits) { return splits.map(function (k) { return list[k] || ''; }); }
      }],
      scales: {y: {range: function () { return [-0.2, list.length - 0.1]; }}}
    }, cols);

    var f = latest('throttle');
    summary('throttle', f ? [
      'window ' + fixed(f.window, 0),
      'in flight ' + fixed(f.in_flight, 0),
      f.source ? str(f.source) : ''
    ] : []);
  }

  function renderUpstreampick() {
    var up = function (s) { return arr(first(feature(s, 'upstreampick'), ['upstreams'])); };
    var servers = names(up, function (u) { return u.server; });
    var rttID = 'chart-upstreampick-rtt';
    var texts = [];
    var rtts = servers.map(function (server) {
      var text = [];
      texts.push(text);
      return column(function (s, i) {
        var u = find(up(s), 'server', server);
        if (!u || u.sampled === false) return null;
        var sec = num(u.rtt_seconds);
        var ms = sec !== null ? sec * 1000 : num(u.rtt_ms);
        if (ms === null) return null;
        var notes = [ms.toFixed(2) + ' ms'];
        if (num(u.tier) !== null) notes.push('tier ' + u.tier);
        if (u.healthy === false) notes.push('unhealthy');
        if (u.draining === true) notes.push('draining');
        text[i] = notes.join(' · ');
        return ms;
      });
    });
    state.legend[rttID] = texts;
    var key = 'servers:' + servers.join('\u0000');
    // The label carries each upstream's current tier; a tier change redraws the chart with the new labels.
    var now = latest('upstreampick');
    var labels = servers.map(function (server) {
      var u = find(now && now.upstreams, 'server', server);
      return u && num(u.tier) !== null ? server + ' (tier ' + u.tier + ')' : server;
    });
    draw(rttID, {
      key: 'rtt:' + labels.join('\u0000'),
      empty: 'no upstream sampled yet',
      series: labels.map(function (label, k) {
        return line(label, COLORS[k % COLORS.length], {width: 2, value: legendText(rttID, digits(2))});
      }),
      axes: valueAxes,
      scales: {y: {range: fromZero(0.1)}}
    }, rtts);

    draw('chart-upstreampick-picks', {
      key: key,
      series: servers.map(function (server, k) {
        return line(server, COLORS[k % COLORS.length], {value: digits(1)});
      }),
      axes: valueAxes,
      scales: {y: {range: fromZero(1)}}
    }, servers.map(function (server) {
      return rate(function (s) { var u = find(up(s), 'server', server); return u && u.picks; });
    }));

    var f = now;
    upstreamTable(f ? arr(f.upstreams) : []);
    summary('upstreampick', f ? [
      f.mode ? 'mode ' + str(f.mode) : '',
      num(f.rejected) !== null ? 'rejected ' + f.rejected : ''
    ] : []);
  }

  function upstreamTable(ups) {
    var body = document.querySelector('#upstreams tbody');
    if (!body) return;
    body.textContent = '';
    ups.forEach(function (u) {
      u = obj(u);
      if (!u) return;
      var tr = document.createElement('tr');
      var sec = num(u.rtt_seconds);
      var ms = sec !== null ? sec * 1000 : num(u.rtt_ms);
      var health = u.healthy === false ? 'unhealthy' : u.healthy === true ? 'healthy' : '–';
      if (u.draining === true) health += ', draining';
      [str(u.server), health, num(u.tier) === null ? '–' : String(u.tier), fixed(ms, 2),
        num(u.in_flight) === null ? '–' : String(u.in_flight), num(u.picks) === null ? '–' : String(u.picks)]
        .forEach(function (text, k) {
          var td = document.createElement('td');
          td.textContent = text;
          if (k === 1) td.className = u.healthy === false ? 'unhealthy' : 'healthy';
          tr.appendChild(td);
        });
      body.appendChild(tr);
    });
  }

  function renderRebalance() {
    var id = 'chart-rebalance';
    var note = document.getElementById('note-rebalance');
    var figure = document.getElementById('figure-rebalance');
    var f = latest('rebalance');
    if (!f || f.enabled === false) {
      var why = f ? str(f.reason) : '';
      if (note) {
        note.textContent = f ? 'off: ' + (why || 'disabled') : 'no rebalance status yet';
        note.className = f ? 'note off' : 'note';
      }
      if (figure) figure.hidden = !!f;
      clearChart(id, 'off');
      summary('rebalance', []);
      return;
    }
    if (note) { note.textContent = f.last_error ? 'last error: ' + str(f.last_error) : ''; note.className = 'note'; }
    if (figure) figure.hidden = false;
    var rb = function (s) { var r = feature(s, 'rebalance'); return r && r.enabled !== false ? r : null; };
    draw(id, {
      key: 'rebalance',
      series: [
        line('this node', COLORS[0], {width: 2, value: digits(0)}),
        line('cluster average', COLORS[2], {dash: [4, 4], value: digits(1)}),
        line('sheds/s', COLORS[1], {scale: 'rate', value: digits(1)})
      ],
      axes: [{}, {size: fitLabels}, {scale: 'rate', side: 1, size: fitLabels, grid: {show: false}}],
      scales: {y: {range: fromZero(1)}, rate: {range: fromZero(1)}}
    }, [
      column(function (s) { return rb(s).connections; }),
      column(function (s) { return rb(s).average; }),
      rate(function (s) { return first(rb(s), ['shed', 'shed_total']); })
    ]);
    summary('rebalance', [
      f.decision ? str(f.decision) : '',
      num(f.nodes) !== null ? f.nodes + ' nodes' : ''
    ]);
  }

  function summary(name, parts) {
    var el = document.getElementById('summary-' + name);
    if (el) el.textContent = parts.filter(function (p) { return p; }).join(' · ');
  }

  function render() {
    [renderLoadshed, renderThrottle, renderUpstreampick, renderRebalance].forEach(function (r) {
      try { r(); } catch (e) {
        // One feature's surprise must not stop the others from drawing.
        if (window.console) console.error(e);
      }
    });
    live.samples = state.samples.length;
    live.span = state.times.length ? state.times[state.times.length - 1] - state.times[0] : 0;
  }

  // ---- polling

  function setConn(ok, text) {
    var el = document.getElementById('conn');
    if (!el) return;
    el.textContent = text;
    el.className = ok ? 'conn' : 'conn down';
  }

  // ingest adds the answer's samples; it returns true when the gateway restarted and everything must be fetched
  // again.
  function ingest(d) {
    d = obj(d);
    if (!d) return false;
    if (num(d.capacity) > 0) state.capacity = d.capacity;
    if (num(d.last) !== null && d.last < state.last) {
      state.samples = [];
      state.times = [];
      state.last = 0;
      return true;
    }
    arr(d.samples).forEach(function (s) {
      s = obj(s);
      if (!s) return;
      var seq = num(s.seq);
      var t = Date.parse(str(s.time)) / 1000;
      var prev = state.times[state.times.length - 1];
      if (seq === null || seq <= state.last || !isFinite(t) || (prev !== undefined && t < prev)) return;
      state.samples.push(s);
      state.times.push(t);
      state.last = seq;
    });
    var extra = state.samples.length - state.capacity;
    if (extra > 0) {
      state.samples.splice(0, extra);
      state.times.splice(0, extra);
    }
    return false;
  }

  function poll() {
    var url = '/live/data' + (state.last > 0 ? '?since=' + state.last : '');
    var again = false;
    fetch(url, {cache: 'no-store'}).then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    }).then(function (d) {
      again = ingest(d);
      render();
      setConn(true, 'live: ' + state.samples.length + ' samples, newest #' + state.last);
    }).catch(function (e) {
      setConn(false, 'no answer from the gateway (' + (e && e.message ? e.message : e) + '), retrying');
    }).then(function () {
      setTimeout(poll, again ? 0 : POLL_MS);
    });
  }

  function resizeAll() {
    var h = chartHeight();
    Object.keys(state.charts).forEach(function (id) {
      var el = document.getElementById(id);
      var u = state.charts[id].u;
      var w = el ? chartWidth(el) : u.width;
      if (w !== u.width || h !== u.height) u.setSize({width: w, height: h});
    });
  }

  var addr = document.getElementById('addr');
  if (addr) addr.textContent = location.host;
  // The load command reads the gateway's address from FIBERGUARD_ADDR, as the gateway does.
  var cmd = document.getElementById('load-cmd');
  if (cmd && location.host && location.host !== '127.0.0.1:8080') {
    cmd.textContent = 'FIBERGUARD_ADDR=' + location.host + ' go run ./examples/load';
  }
  // The window buttons: a new span redraws every chart over it.
  Array.prototype.forEach.call(document.querySelectorAll('#windows button'), function (b) {
    b.addEventListener('click', function () {
      var w = Number(b.getAttribute('data-window'));
      if (WINDOWS.indexOf(w) < 0) return;
      state.window = live.window = w;
      Array.prototype.forEach.call(document.querySelectorAll('#windows button'), function (o) {
        o.setAttribute('aria-pressed', String(o === b));
      });
      render();
    });
  });
  var pending = null;
  window.addEventListener('resize', function () {
    // Coalesce a drag's many events into one resize per frame.
    if (pending === null) pending = requestAnimationFrame(function () { pending = null; resizeAll(); });
  });
  poll();
})();
