"""Speed benchmarks: ratios against anchors measured in the same run; each script writes
``benchmarks/results/<name>.md`` with the machine, the load, the date and the commit of its run."""
