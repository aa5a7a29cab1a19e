// The counting thread of the bench page's fine clock (`FineClock` in bench.js): adds one to a
// shared counter as fast as it can until the page terminates it.
onmessage = ({ data }) => {
  const count = new Int32Array(data);
  postMessage("counting");
  for (;;) Atomics.add(count, 0, 1);
};
