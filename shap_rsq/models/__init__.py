"""Reading fitted models: one module per library turns a model into one forest table.

- :mod:`.forest`: the forest table (:class:`~.forest.Forest`, node arrays of every tree), the one
  thing the kernels read.
- :mod:`.categories` and :mod:`.category_codes`: splits on sets of categories as splits on routing
  columns, and input values as the codes those splits test.
- :mod:`.info`: :class:`~.info.ModelInfo`, the model facts the rest of the library needs
  (features and their names, outputs, how to check the trees against the model's predictions).
- :mod:`.inspect`: :func:`~.inspect.inspect_model`, which dispatches to the family modules
  (:mod:`.sklearn_models`, :mod:`.xgboost_models`, :mod:`.lightgbm_models`,
  :mod:`.catboost_models`) and refuses what cannot be decomposed.

This package's ``__init__`` imports nothing: the kernels read :mod:`.forest` without pulling in
shap or scikit-learn.
"""
