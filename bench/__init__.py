"""`make bench`: the numbers the issues ask for, measured in one run against in-run baselines."""
