
(function () {
  var root = document.getElementById('atlas');
  var loop = document.getElementById('atlas-loop'), strategy = document.getElementById('atlas-strategy');
  var tf = document.getElementById('atlas-tf'), only = document.getElementById('atlas-changed');
  var undecided = document.getElementById('atlas-undecided'), details = root.querySelector('details.undecided');
  function marked() {  // the cells "only rows with a change" looks for: the changes, and on demand the ◆ flips
    var at = tf.value ? '[data-ver="' + CSS.escape(tf.value) + '"]' : '';
    return 'td.changed' + at + (undecided.checked ? ', td.undecided' + at : '');
  }
  function apply() {
    var keep = tf.value ? [tf.value, tf.options[tf.selectedIndex].dataset.prev] : null;
    root.classList.toggle('show-undecided', undecided.checked);
    if (details && undecided.checked) { details.open = true; }
    root.querySelectorAll('tr[data-loop], ol.changes > li').forEach(function (el) {
      var show = (!loop.value || el.dataset.loop === loop.value) &&
        (!strategy.value || el.dataset.strategy === strategy.value) &&
        (el.tagName !== 'LI' || !tf.value || el.dataset.ver === tf.value) &&
        (!only.checked || el.tagName !== 'TR' || el.querySelector(marked()) !== null);
      el.classList.toggle('hidden', !show);
    });
    root.querySelectorAll('table.atlas [data-ver]').forEach(function (el) {
      el.classList.toggle('colhide', keep !== null && keep.indexOf(el.dataset.ver) < 0);
    });
    var state = [['loop', loop.value], ['strategy', strategy.value], ['tf', tf.value],
                 ['changed', only.checked ? '1' : ''],
                 ['undecided', undecided.checked ? '1' : '']].filter(function (kv) { return kv[1]; })
      .map(function (kv) { return kv[0] + '=' + encodeURIComponent(kv[1]); }).join('&');
    try { history.replaceState(null, '', state ? '#' + state : location.pathname + location.search); } catch (e) {}
  }
  function fromHash() {  // a link to a view: #loop=sweep&strategy=reuse_model&tf=2.17.1&changed=1
    var q = new URLSearchParams(location.hash.slice(1));
    [[loop, 'loop'], [strategy, 'strategy'], [tf, 'tf']].forEach(function (pair) {
      var v = q.get(pair[1]);
      if (v !== null && Array.prototype.some.call(pair[0].options, function (o) { return o.value === v; })) {
        pair[0].value = v;
      }
    });
    only.checked = q.get('changed') === '1';
    undecided.checked = q.get('undecided') === '1';
    apply();
  }
  [loop, strategy, tf, only, undecided].forEach(function (c) { c.addEventListener('change', apply); });
  window.addEventListener('hashchange', fromHash);
  root.querySelectorAll('table.atlas td[tabindex]').forEach(function (td) {
    function toggle() { td.classList.toggle('open'); }
    td.addEventListener('click', function (e) { if (e.target.tagName !== 'A') { toggle(); } });
    td.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); }
    });
  });
  if (location.hash.length > 1) { fromHash(); }
})();
