import { Metric } from "effect"
console.log(Metric.linearBoundaries({ start: 0, width: 10, count: 5 }), Metric.exponentialBoundaries({ start: 1, factor: 2, count: 4 }), Metric.boundariesFromIterable([5, 1, 5, 3]))
