"""The comparison dashboard (app label ``dashboard``): comparisons of 2–8 scenarios, sweeps,
plans (planner searches), share links and exports.

Each object has a service module named for it (``comparisons``, ``sweeps``, ``plans``,
``sharing``, ``exports``, ``variants``; ``table`` builds a comparison's table), and the
``models``, ``serializers``, ``api``, ``views`` and ``forms`` packages hold one module per
object under the same names, re-exported from the package. ``tasks`` (the Celery chunk tasks)
and ``admin`` keep the names Celery's and Django's discovery look for."""
