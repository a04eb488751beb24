#include "report.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
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

void PrintLine(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::printf("%s\n", line.c_str());
}

// A heading line: cells right-aligned in their columns, '#' in the first position.
void PrintHeading(const std::array<const char*, 13>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string cell = cells[i];
    line += std::string(kWidths[i] - std::min<size_t>(cell.size(), kWidths[i]), ' ') + cell;
  }
  line[0] = '#';
  PrintLine(line);
}

std::string FormatTime(double us) {
  char text[32];
  // Fewer decimals as the time grows keep the column at seven characters (nccl-tests' rule).
  const char* format = us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f";
  std::snprintf(text, sizeof(text), format, us);
  return text;
}

double AlgBandwidth(size_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / time_us / 1e3 : 0.0;  // GB/s (1e9 bytes)
}

std::string FormatGroup(const Measurement& m, size_t bytes, double bus_factor) {
  char text[96];
  if (!m.measured) {
    std::snprintf(text, sizeof(text), "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
    return text;
  }
  const double algbw = AlgBandwidth(bytes, m.time_us);
  std::string wrong = m.wrong ? std::to_string(*m.wrong) : "N/A";
  std::snprintf(text, sizeof(text), "  %s  %6.2f  %6.2f  %5s", FormatTime(m.time_us).c_str(), algbw,
                algbw * bus_factor, wrong.c_str());
  return text;
}

}  // namespace

void Report::BeginTable(const TableInfo& info) {
  table_ = Totals{};
  if (!print_) return;
  if (printed_table_) std::printf("#\n");
  printed_table_ = true;
  std::string repeats =
      info.repeats > 1 ? "  repeats " + std::to_string(info.repeats) + " (median)" : "";
  std::printf(
      "# scl-bench %.*s  ranks %d  mem %.*s  iters %d  warmup %d  check %d%s  "
      "StrataCL %d.%d.%d\n",
      static_cast<int>(info.collective.size()), info.collective.data(), info.nranks,
      static_cast<int>(info.mem.size()), info.mem.data(), info.iters, info.warmup,
      info.check ? 1 : 0, repeats.c_str(), info.version / 10000, info.version % 10000 / 100,
      info.version % 100);
  std::printf("#\n");
  std::string labels(kInPlaceLabelAt, ' ');
  labels[0] = '#';
  labels.replace(kOutOfPlaceLabelAt, 12, "out-of-place");
  PrintLine(labels + "in-place");
  PrintHeading({"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                "time", "algbw", "busbw", "#wrong"});
  PrintHeading({"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", ""});
  std::fflush(stdout);
}

void Report::Add(const Measurement& m, double busbw) {
  if (!m.measured) return;
  for (Totals* totals : {&table_, &overall_}) {
    totals->wrong += m.wrong.value_or(0);
    totals->busbw_sum += busbw;
    totals->busbw_count += 1;
  }
}

void Report::AddRow(const Row& row) {
  for (const Measurement* m : {&row.out_of_place, &row.in_place}) {
    Add(*m, AlgBandwidth(row.bytes, m->time_us) * row.bus_factor);
  }
  if (!print_) return;
  const std::string_view type = TypeName(row.type);
  const std::string_view op = row.op ? OpName(*row.op) : "none";
  std::printf("%12zu  %12zu  %8.*s  %6.*s  %6d%s%s\n", row.bytes, row.count,
              static_cast<int>(type.size()), type.data(), static_cast<int>(op.size()), op.data(),
              row.root, FormatGroup(row.out_of_place, row.bytes, row.bus_factor).c_str(),
              FormatGroup(row.in_place, row.bytes, row.bus_factor).c_str());
  std::fflush(stdout);
}

void Report::PrintFooter(const Totals& totals) const {
  if (!print_) return;
  std::printf("# Out of bounds values : %" PRIu64 " %s\n", totals.wrong,
              totals.wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %.4f\n",
              totals.busbw_count > 0 ? totals.busbw_sum / totals.busbw_count : 0.0);
  std::fflush(stdout);
}

void Report::EndTable() { PrintFooter(table_); }

void Report::PrintOverall() const {
  if (print_) std::printf("#\n# Overall\n");
  PrintFooter(overall_);
}

}  // namespace stratacl::bench
