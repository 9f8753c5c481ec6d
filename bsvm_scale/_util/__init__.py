"""Small helpers every layer may use and that import nothing else of the
package: atomic file replacement (``atomic``), estimator helpers such as the
input standardiser and random-state handling (``base``), argument validation
(``validation``), peak-memory reading (``memory``), CSV tables (``tables``)
and BLAS thread limits (``threads``)."""
