"""``python -m shap_rsq`` runs the ``shap-rsq`` command line."""

from .cli import main

raise SystemExit(main())
