"""Shell knowledge without rules: the lexical scan, the bashlex parse, wrapper stripping, what a command runs, whether
it is provably read-only, and the paths its arguments name. The bottom floor: it imports only the standard library
and bashlex; ``permissions`` matches rules against what it finds, ``tools.bash`` asks it about concurrency."""
