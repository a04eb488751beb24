#include "report.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "datatypes.h"

namespace stratacl::bench {
namespace {

// Column widths (separators included) of: size, count, type, redop, root, then time, algbw,
// busbw, #wrong for out-of-place and again for in-place. Rows and headings share them.
constexpr std::array<int, 13> kWidths = {12, 14, 10, 8, 8, 9, 8, 8, 7, 9, 8, 8, 7};

// Where the column-group labels start, as nccl-tests places them.
constexpr size_t kOutOfPlaceLabelAt = 63;
constexpr size_t kInPlaceLabelAt = 98;

void print_line(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::printf("%s\n", line.c_str());
}

// Width of each extra column (p99, per-iteration statistics), appended after the nccl-tests
// columns, and of the timestamp column after them.
constexpr int kExtraWidth = 10;
constexpr int kTimestampWidth = 21;

std::string right_aligned(const std::string& cell, int width) {
  return std::string(width - std::min<size_t>(cell.size(), width), ' ') + cell;
}

// A heading line: cells right-aligned in their columns, '#' in the first position; `extra`
// cells go in the extra columns after them, `last` in the timestamp column (when not null).
void print_heading(const std::array<const char*, 13>& cells, const std::vector<const char*>& extra,
                   const char* last) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += right_aligned(cells[i], kWidths[i]);
  for (const char* cell : extra) line += right_aligned(cell, kExtraWidth);
  if (last != nullptr) line += right_aligned(last, kTimestampWidth);
  line[0] = '#';
  print_line(line);
}

std::string format_time(double us) {
  char text[32];
  // Fewer decimals as the time grows keep the column at seven characters (nccl-tests' rule).
  const char* format = us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f";
  std::snprintf(text, sizeof(text), format, us);
  return text;
}

// GB/s (1e9 bytes), times the collective's algbw factor.
double alg_bandwidth(size_t bytes, double time_us, double alg_factor) {
  return time_us > 0 ? static_cast<double>(bytes) / time_us / 1e3 * alg_factor : 0.0;
}

std::string format_p99(const Measurement& m) {
  return right_aligned(m.measured ? format_time(m.p99_us) : "N/A", kExtraWidth);
}

// The four per-iteration columns of a column group: min, max, p99 (us) and cv (%).
std::string format_iterations(const Measurement& m) {
  std::string cells;
  if (!m.iterations) {
    for (int i = 0; i < 4; ++i) cells += right_aligned("N/A", kExtraWidth);
    return cells;
  }
  const IterationStats& it = *m.iterations;
  for (double us : {it.min_us, it.max_us, it.p99_us}) {
    cells += right_aligned(format_time(us), kExtraWidth);
  }
  char cv[32];
  std::snprintf(cv, sizeof(cv), "%.2f", it.cv_pct);
  return cells + right_aligned(cv, kExtraWidth);
}

// The time of day, as nccl-tests prints it with -S.
std::string timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

// A JSON number, or null where the value is not finite (JSON has no NaN or infinity).
std::string json_number(double value, const char* format) {
  if (!std::isfinite(value)) return "null";
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// Text safe inside a JSON string.
std::string json_escaped(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Text safe as one CSV field (quoted when it holds a separator, quote or line break).
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double value, const char* format) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// " key=value key=value" (numbers) as JSON members: ", \"key\": value, ...".
std::string json_registration(const std::string& pairs) {
  std::istringstream in(pairs);
  std::string out, pair;
  while (in >> pair) {
    const size_t eq = pair.find('=');
    const std::string value = pair.substr(eq + 1);
    // The values are printed numbers; a nan or inf among them becomes null.
    const bool finite = value.find_first_of("ni") == std::string::npos;
    out += ", \"" + pair.substr(0, eq) + "\": " + (finite ? value : "null");
  }
  return out;
}

std::string json_iterations(const IterationStats& it) {
  return "{\"samples\": " + std::to_string(it.samples) +
         ", \"min_us\": " + json_number(it.min_us, "%.3f") +
         ", \"max_us\": " + json_number(it.max_us, "%.3f") +
         ", \"mean_us\": " + json_number(it.mean_us, "%.3f") +
         ", \"p50_us\": " + json_number(it.p50_us, "%.3f") +
         ", \"p99_us\": " + json_number(it.p99_us, "%.3f") +
         ", \"cv_pct\": " + json_number(it.cv_pct, "%.3f") + "}";
}

std::string format_group(const Measurement& m, size_t bytes, double alg_factor, double bus_factor) {
  char text[96];
  if (!m.measured) {
    std::snprintf(text, sizeof(text), "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
    return text;
  }
  const double algbw = alg_bandwidth(bytes, m.time_us, alg_factor);
  std::string wrong = m.wrong ? std::to_string(*m.wrong) : "N/A";
  std::snprintf(text, sizeof(text), "  %s  %6.2f  %6.2f  %5s", format_time(m.time_us).c_str(),
                algbw, algbw * bus_factor, wrong.c_str());
  return text;
}

}  // namespace

void Report::print_run_header() const {
  if (!print_) return;
  std::printf("# StrataCL %s  ranks %d  host %s  isa %s\n", version_string(info_.version).c_str(),
              info_.nranks, info_.host.c_str(), info_.isa.c_str());
  std::fflush(stdout);
}

void Report::print_memcpy() const {
  if (!print_) return;
  std::printf("# memcpy_gbs %.2f (rank 0, one thread, after the rows)\n", info_.memcpy_gbs);
  std::fflush(stdout);
}

void Report::note_registration(double first_us, double cached_us, double release_us, size_t bytes) {
  registration_ = " reg_bytes=" + std::to_string(bytes) +
                  " reg_first_us=" + number(first_us, "%.3f") +
                  " reg_cached_us=" + number(cached_us, "%.3f") +
                  " reg_release_us=" + number(release_us, "%.3f");
  if (!print_) return;
  std::printf(
      "# sclCommRegister of %zu bytes: first %.3f us, cached %.3f us (a reference on the "
      "existing range), deregister %.3f us\n",
      bytes, first_us, cached_us, release_us);
  std::fflush(stdout);
}

void Report::print_note(const std::string& text) const {
  if (!print_) return;
  std::printf("# %s\n", text.c_str());
  std::fflush(stdout);
}

void Report::print_memory(uint64_t init, uint64_t buffers, uint64_t measuring) const {
  if (!print_) return;
  auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  std::printf(
      "# Host memory (resident, the most of any rank): init %.2f MiB | buffers %.2f MiB | "
      "measuring %.2f MiB | total %.2f MiB\n",
      mib(init), mib(buffers), mib(measuring), mib(init + buffers + measuring));
  std::fflush(stdout);
}

void Report::begin_table(const TableInfo& info) {
  table_ = Totals{};
  collective_ = std::string(info.collective);
  mode_ = std::string(info.mode);
  if (!print_) return;
  if (printed_table_) std::printf("#\n");
  printed_table_ = true;
  std::string repeats = info.repeats > 1 ? "  repeats " + std::to_string(info.repeats) +
                                               " (median; p99 in the last two columns)"
                                         : "";
  std::printf(
      "# scl-bench %.*s  ranks %d  mem %.*s  mode %.*s  iters %d  warmup %d  check %d%s  "
      "StrataCL %d.%d.%d\n",
      static_cast<int>(info.collective.size()), info.collective.data(), info.nranks,
      static_cast<int>(info.mem.size()), info.mem.data(), static_cast<int>(info.mode.size()),
      info.mode.data(), info.iters, info.warmup, info.check_iters, repeats.c_str(),
      info.version / 10000, info.version % 10000 / 100, info.version % 100);
  std::printf("#\n");
  std::string labels(kInPlaceLabelAt, ' ');
  labels[0] = '#';
  labels.replace(kOutOfPlaceLabelAt, 12, "out-of-place");
  print_line(labels + "in-place");
  // Appended one by one: g++ 12 at -O3 misreads vector::insert of a list into an empty vector
  // as an overflow (-Wstringop-overflow).
  std::vector<const char*> names, units;
  const auto add = [&](std::initializer_list<const char*> n, std::initializer_list<const char*> u) {
    for (const char* x : n) names.push_back(x);
    for (const char* x : u) units.push_back(x);
  };
  if (columns_.p99) add({"p99 oop", "p99 ip"}, {"(us)", "(us)"});
  if (columns_.iterations) {
    add({"i_min oop", "i_max oop", "i_p99 oop", "i_cv% oop", "i_min ip", "i_max ip", "i_p99 ip",
         "i_cv% ip"},
        {"(us)", "(us)", "(us)", "(%)", "(us)", "(us)", "(us)", "(%)"});
  }
  print_heading({"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                 "time", "algbw", "busbw", "#wrong"},
                names, columns_.timestamp ? "timestamp" : nullptr);
  print_heading({"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                 "(GB/s)", ""},
                units, columns_.timestamp ? "(Y-m-d H:M:S)" : nullptr);
  std::fflush(stdout);
}

void Report::add(const Measurement& m, double busbw) {
  if (!m.measured) return;
  for (Totals* totals : {&table_, &overall_}) {
    totals->wrong += m.wrong.value_or(0);
    totals->busbw_sum += busbw;
    totals->busbw_count += 1;
  }
}

void Report::add_row(const Row& row) {
  for (const Measurement* m : {&row.out_of_place, &row.in_place}) {
    add(*m, alg_bandwidth(row.bytes, m->time_us, row.alg_factor) * row.bus_factor);
    if (print_ && m->measured) {
      records_.push_back({collective_, mode_, row.bytes, row.count, row.type, row.op, row.root,
                          m == &row.in_place, row.alg_factor, row.bus_factor, row.cycle, *m});
    }
  }
  if (!print_) return;
  std::string extra;
  if (columns_.p99) extra += format_p99(row.out_of_place) + format_p99(row.in_place);
  if (columns_.iterations) {
    extra += format_iterations(row.out_of_place) + format_iterations(row.in_place);
  }
  if (columns_.timestamp) extra += right_aligned(timestamp_now(), kTimestampWidth);
  const std::string_view type = dtype_name(row.type);
  const std::string_view op = row.op ? op_name(*row.op) : "none";
  std::printf(
      "%12zu  %12zu  %8.*s  %6.*s  %6d%s%s%s\n", row.bytes, row.count,
      static_cast<int>(type.size()), type.data(), static_cast<int>(op.size()), op.data(), row.root,
      format_group(row.out_of_place, row.bytes, row.alg_factor, row.bus_factor).c_str(),
      format_group(row.in_place, row.bytes, row.alg_factor, row.bus_factor).c_str(), extra.c_str());
  std::fflush(stdout);
}

void Report::print_footer(const Totals& totals) const {
  if (!print_) return;
  std::printf("# Out of bounds values : %" PRIu64 " %s\n", totals.wrong,
              totals.wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %.4f\n",
              totals.busbw_count > 0 ? totals.busbw_sum / totals.busbw_count : 0.0);
  std::fflush(stdout);
}

void Report::end_table() { print_footer(table_); }

void Report::print_overall() const {
  if (print_) std::printf("#\n# Overall\n");
  print_footer(overall_);
}

std::string Report::write_files(const std::string& csv_path, const std::string& json_path) const {
  if (!print_) return "";
  // The header, as key=value pairs for the CSV comment line and as JSON members.
  const std::string version = version_string(info_.version);
  const std::string memcpy_gbs = number(info_.memcpy_gbs, "%.3f");

  if (!csv_path.empty()) {
    std::ostringstream out;
    out << "# scl-bench version=" << version << " ranks=" << info_.nranks << " host=" << info_.host
        << " isa=" << info_.isa << " memcpy_gbs=" << memcpy_gbs << " mem=" << info_.mem
        << " mode=" << info_.mode << " iters=" << info_.iters << " warmup=" << info_.warmup
        << " repeats=" << info_.repeats << " check=" << info_.check_iters << registration_ << "\n";
    out << "collective,dtype,op,root,bytes,count,in_place,mode,time_us,p99_us,algbw_gbs,"
           "busbw_gbs,wrong\n";
    for (const Record& r : records_) {
      const double algbw = alg_bandwidth(r.bytes, r.m.time_us, r.alg_factor);
      out << csv_field(r.collective) << ',' << dtype_name(r.type) << ','
          << (r.op ? op_name(*r.op) : "none") << ',' << r.root << ',' << r.bytes << ',' << r.count
          << ',' << (r.in_place ? 1 : 0) << ',' << csv_field(r.mode) << ','
          << number(r.m.time_us, "%.3f") << ',' << number(r.m.p99_us, "%.3f") << ','
          << number(algbw, "%.6g") << ',' << number(algbw * r.bus_factor, "%.6g") << ','
          << (r.m.wrong ? std::to_string(*r.m.wrong) : "") << "\n";
    }
    std::ofstream file(csv_path);
    file << out.str();
    if (!file.flush()) return "cannot write " + csv_path;
  }

  if (!json_path.empty()) {
    std::ostringstream out;
    out << "{\n  \"header\": {\"tool\": \"scl-bench\", \"program\": \""
        << json_escaped(info_.program) << "\", \"version\": \"" << version
        << "\", \"version_code\": " << info_.version << ", \"ranks\": " << info_.nranks
        << ", \"host\": \"" << json_escaped(info_.host) << "\", \"isa\": \""
        << json_escaped(info_.isa)
        << "\", \"memcpy_gbs\": " << json_number(info_.memcpy_gbs, "%.3f") << ", \"mem\": \""
        << json_escaped(info_.mem) << "\", \"mode\": \"" << json_escaped(info_.mode)
        << "\", \"iters\": " << info_.iters << ", \"agg_iters\": " << info_.agg_iters
        << ", \"warmup\": " << info_.warmup << ", \"repeats\": " << info_.repeats
        << ", \"check\": " << (info_.check_iters > 0 ? "true" : "false")
        << ", \"check_iters\": " << info_.check_iters << ", \"average\": \""
        << json_escaped(info_.average) << "\", \"unalign\": " << info_.unalign
        << json_registration(registration_) << "},\n  \"rows\": [";
    for (size_t i = 0; i < records_.size(); ++i) {
      const Record& r = records_[i];
      const double algbw = alg_bandwidth(r.bytes, r.m.time_us, r.alg_factor);
      out << (i == 0 ? "\n" : ",\n") << "    {\"collective\": \"" << json_escaped(r.collective)
          << "\", \"dtype\": \"" << dtype_name(r.type) << "\", \"op\": \""
          << (r.op ? op_name(*r.op) : "none") << "\", \"root\": " << r.root
          << ", \"bytes\": " << r.bytes << ", \"count\": " << r.count
          << ", \"in_place\": " << (r.in_place ? "true" : "false") << ", \"mode\": \""
          << json_escaped(r.mode) << "\", \"cycle\": " << r.cycle
          << ", \"time_us\": " << json_number(r.m.time_us, "%.3f")
          << ", \"p99_us\": " << json_number(r.m.p99_us, "%.3f")
          << ", \"algbw_gbs\": " << json_number(algbw, "%.6g")
          << ", \"busbw_gbs\": " << json_number(algbw * r.bus_factor, "%.6g")
          << ", \"wrong\": " << (r.m.wrong ? std::to_string(*r.m.wrong) : "null");
      if (r.m.iterations) out << ", \"iterations\": " << json_iterations(*r.m.iterations);
      out << "}";
    }
    out << (records_.empty() ? "]\n}\n" : "\n  ]\n}\n");
    std::ofstream file(json_path);
    file << out.str();
    if (!file.flush()) return "cannot write " + json_path;
  }
  return "";
}

}  // namespace stratacl::bench
