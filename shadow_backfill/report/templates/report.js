{# The page's only script. The Content-Security-Policy allows it by the SHA-256 of this file as
   rendered (html.py computes it), so any edit here changes the hash with it: no manual step. #}

(function(){
  var box = document.getElementById('only-problems');
  box.addEventListener('change', function(){
    document.querySelectorAll('details.partition').forEach(function(d){
      d.style.display = (box.checked && d.dataset.verdict === 'pass') ? 'none' : '';
    });
  });
  document.querySelectorAll('.cell, .day').forEach(function(c){
    c.addEventListener('click', function(){
      var d = document.getElementById('p-' + c.dataset.partition);
      if (d) { d.open = true; d.scrollIntoView(); }
    });
  });
  var data = JSON.parse(document.getElementById('report-data').textContent);
  document.getElementById('render-status').textContent = 'rendered ' + data.partitions + ' partitions';
  document.body.dataset.rendered = 'ok';
})();
