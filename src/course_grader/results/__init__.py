"""Results: the gradebook, exports, feedback pages, hand-back, private folders."""
