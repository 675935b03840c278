"""Steps that run models and keep what they compute: many models scored on many prompts into one long
table through the score store (``scoring``), many searches as one cached computation (``searches``:
chapter 5's grid and its shortlists from stored single-token scores) and the method comparison
(``comparisons``). Sits above ``engine`` (which loads and scores), ``tables`` (which stores and reads)
and ``stats``; below ``training``."""
