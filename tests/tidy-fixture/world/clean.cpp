// Fixture: clean code (only the sim/ fixture has violations).
int clean() { return 1; }
