"""Published benchmarks run through the router and graded as their authors grade them."""
