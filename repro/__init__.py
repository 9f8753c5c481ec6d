"""The results page of the reproduction runs (``docs/results.md``): a tool of the
source checkout, not part of the installed package.

``bsvm-scale results`` (argument parsing in :mod:`bsvm_scale.cli`) imports this
package from the checkout and calls :func:`write_results`, which reads the run
exports (:mod:`bsvm_scale.pipeline.outputs.export`, or a checksummed archive of them,
:mod:`bsvm_scale.pipeline.outputs.archive`) and the benchmark JSON files and writes the
page, its figures and its summary tables. Modules: one per protocol
(:mod:`.r1` ... :mod:`.c4`) and for the peer benchmarks (:mod:`.bench`);
shared: :mod:`.runs` (reading runs), :mod:`.stats`, :mod:`.compare` (tests and
automatic checks), :mod:`.tables`, :mod:`.figures`, :mod:`.summaries` (CSV),
:mod:`.prose` (the page's text, ``repro/prose.md``) and :mod:`.page` (assembly).
"""

from .page import write_results

__all__ = ["write_results"]
