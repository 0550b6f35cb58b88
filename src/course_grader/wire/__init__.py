"""The format between the grader and its children: messages both sides import."""
