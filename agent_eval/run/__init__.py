"""One evaluation: its settings, its plan, the served model, the engine and the scoring."""
