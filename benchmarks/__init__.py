"""Speed benchmarks: ratios against anchors measured in the same run (see benchmarks/README.md)."""
