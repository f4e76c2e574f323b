"""The evaluators: scorers and runners of answer correctness (``answer_keys``), root cause
(``rca``), Kubernetes cases (``kubernetes``) and retrieval (``retrieval``), used by ``raydiag eval …``
and by the benchmark scripts. Plain Python: no Ray (the CLI starts the app and hands a runner in)."""
