"""An exercise: its solution notebook parsed once (model), the released copy, the scaffold, answers."""
