// The nccl-tests style results table, printed by rank 0 only, and the same rows as CSV and JSON.
#ifndef STRATACL_TOOLS_SCL_BENCH_REPORT_H_
#define STRATACL_TOOLS_SCL_BENCH_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "run_info.h"
#include "stratacl/stratacl.h"

namespace stratacl::bench {

// Statistics of every timed iteration of a column group (-I): per iteration the slowest rank's
// time, over the iterations -K leaves in (those of every repeat).
struct IterationStats {
  double min_us = 0;
  double max_us = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p99_us = 0;  // nearest rank
  double cv_pct = 0;  // standard deviation / mean, in percent
  int samples = 0;
};

// One column group (out-of-place or in-place) of one row.
struct Measurement {
  bool measured = false;  // false: the collective has no such form; printed as N/A
  double time_us = 0;     // per call, the ranks' times combined as -a says; median over repeats
  double p99_us = 0;      // the same, 99th percentile (nearest rank) over the repeats
  std::optional<uint64_t> wrong;             // wrong elements over all ranks; nullopt: unchecked
  std::optional<IterationStats> iterations;  // with -I
};

struct Row {
  size_t bytes;  // the size column
  size_t count;  // the count column, total elements
  sclDataType_t type;
  std::optional<sclRedOp_t> op;  // nullopt: printed as "none"
  int root;                      // -1 for collectives without a root
  double alg_factor;             // algbw = bytes / time * alg_factor
  double bus_factor;             // busbw = algbw * bus_factor
  int cycle;                     // the pass over the sizes (-N), from 0
  Measurement out_of_place;
  Measurement in_place;
};

// What the heading line of a table states about the run.
struct TableInfo {
  std::string_view collective;
  int nranks;
  std::string_view mem;
  std::string_view mode;  // the regime measured: zerocopy, staged or cma
  int iters;
  int warmup;
  int check_iters;
  int repeats;
  int version;  // as from sclGetVersion
};

// Extra columns of every table.
struct Columns {
  bool p99 = false;         // the p99 over the repeats (--repeats > 1)
  bool iterations = false;  // per-iteration statistics (-I)
  bool timestamp = false;   // the time of day (-S)
};

class Report {
 public:
  // Only the printing rank passes print = true; every rank may feed rows all the same. `info`
  // heads the table and the CSV and JSON files.
  Report(bool print, RunInfo info, Columns columns = {})
      : print_(print), info_(std::move(info)), columns_(columns) {}

  // The run's first line: version, ranks, host, reduction ISA.
  void print_run_header() const;
  // The memcpy bandwidth, measured after the rows: a comment line, and in the files' header.
  void set_memcpy_gbs(double gbs) { info_.memcpy_gbs = gbs; }
  void print_memcpy() const;
  // A line giving what registering the buffers cost (mode cma); also goes into the files.
  void note_registration(double first_us, double cached_us, double release_us, size_t bytes);

  // A comment line ("# text"), printed at once.
  void print_note(const std::string& text) const;
  // The resident memory of -M: bytes after init, of the buffers, grown while measuring.
  void print_memory(uint64_t init, uint64_t buffers, uint64_t measuring) const;

  void begin_table(const TableInfo& info);
  void add_row(const Row& row);
  // Prints the table's footer pair: wrong values and average bus bandwidth.
  void end_table();
  // Prints the same pair over every table, for runs of several collectives.
  void print_overall() const;

  uint64_t total_wrong() const { return overall_.wrong; }

  // Writes every row fed so far, one per (collective, type, op, size, in-place, mode), to a CSV
  // file and a JSON file; an empty path skips that file. Returns an error message, or "".
  std::string write_files(const std::string& csv_path, const std::string& json_path) const;

 private:
  // One measured column group of one row, as the files hold it.
  struct Record {
    std::string collective;
    std::string mode;
    size_t bytes;
    size_t count;
    sclDataType_t type;
    std::optional<sclRedOp_t> op;
    int root;
    bool in_place;
    double alg_factor;
    double bus_factor;
    int cycle;
    Measurement m;
  };
  struct Totals {
    uint64_t wrong = 0;
    double busbw_sum = 0;
    int busbw_count = 0;
  };
  void add(const Measurement& m, double busbw);
  void print_footer(const Totals& totals) const;

  bool print_;
  RunInfo info_;
  Columns columns_;
  std::string collective_;  // of the table being fed
  std::string mode_;
  std::string registration_;  // "key=value ..." of note_registration, for the files
  std::vector<Record> records_;
  bool printed_table_ = false;
  Totals table_;
  Totals overall_;
};

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_REPORT_H_
