// Record logs (corpus, keys and token stores): a log written from the input's records, then
// damaged at places the input chooses (either file, any byte, including the headers and the
// entries' offsets and sizes) while the committed state stays what the writer vouched for. The
// reader must refuse or read every record within bounds; never read outside the maps.
#include <fstream>

#include "fuzz_target.h"
#include "index/record_log.h"

SIEVE_FUZZ_TARGET(record_log) {
  if (size < 2) return 0;
  const std::string dir = sieve::fuzz::scratch_dir();
  sieve::index::LogState state;
  size_t at = 1;
  const size_t edits = data[0] % 8;
  {
    auto w = sieve::index::RecordLogWriter::create(dir, "log", "FUZZ", 0);
    // Records: a length byte then that many bytes, up to the last 3 * edits bytes (the edits).
    const size_t body_end = size > 3 * edits + 1 ? size - 3 * edits : 1;
    while (at < body_end) {
      const size_t n = std::min<size_t>(data[at], body_end - at - 1);
      w.append(data + at + 1, n);
      at += 1 + n;
    }
    state = w.sync();
  }
  for (size_t e = 0; e + 3 <= size - std::min(size, at) && e / 3 < edits; e += 3) {
    const uint8_t* ed = data + at + e;
    const std::string file = dir + (ed[0] & 1 ? "/log.idx" : "/log.dat");
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto len = static_cast<size_t>(f.tellg());
    if (len == 0) continue;
    f.seekp(static_cast<std::streamoff>((static_cast<size_t>(ed[1]) * 7919u + ed[0]) % len));
    f.put(static_cast<char>(ed[2]));
  }
  sieve::fuzz::expect_only_sieve_errors([&] {
    sieve::index::RecordLogReader r(dir, "log", "FUZZ", 0, state);
    for (size_t i = 0; i < r.size(); ++i) {
      sieve::fuzz::expect_only_sieve_errors([&] {
        const auto rec = r.record(i);
        volatile uint8_t sink = 0;
        for (size_t b = 0; b < rec.size; ++b) sink ^= rec.data[b];
        (void)sink;
      });
    }
  });
  return 0;
}
