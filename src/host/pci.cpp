// SPDX-License-Identifier: Apache-2.0
// Scan of /sys/bus/pci/devices for NVIDIA functions.
#include "host/pci.h"

#include <charconv>

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

constexpr std::string_view kDevices = "/sys/bus/pci/devices";

std::optional<unsigned> parse_width(std::string_view text) {
  auto v = parse_u64(text);
  if (!v || *v > 64) return std::nullopt;
  return static_cast<unsigned>(*v);
}

std::optional<std::uint32_t> read_hex(const FileSystem& fs, const std::string& path) {
  auto text = detail::read_attr(fs, path);
  if (!text) return std::nullopt;
  auto v = parse_pci_hex(*text);
  return v ? std::optional<std::uint32_t>(*v) : std::nullopt;
}

PciDevice read_function(const FileSystem& fs, const std::string& bus_id, std::uint32_t vendor,
                        std::uint32_t class_code) {
  const std::string dir = fmt::format("{}/{}", kDevices, bus_id);
  PciDevice d;
  d.bus_id = bus_id;
  d.vendor = vendor;
  d.class_code = class_code;
  d.device = read_hex(fs, dir + "/device").value_or(0);
  if (auto link = fs.read_link(dir + "/driver")) {
    const auto slash = link->rfind('/');
    d.driver = slash == std::string::npos ? *link : link->substr(slash + 1);
  }
  auto attr = [&](const char* leaf) { return detail::read_attr(fs, dir + "/" + leaf); };
  if (auto s = attr("current_link_speed")) d.current_link_gts = parse_pci_link_speed(*s);
  if (auto s = attr("max_link_speed")) d.max_link_gts = parse_pci_link_speed(*s);
  if (auto s = attr("current_link_width")) d.current_link_width = parse_width(*s);
  if (auto s = attr("max_link_width")) d.max_link_width = parse_width(*s);
  if (auto s = attr("numa_node")) {
    int node = -1;
    const std::string_view t = trim(*s);
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), node);
    if (ec == std::errc() && end == t.data() + t.size() && node >= 0) d.numa_node = node;
  }
  return d;
}

}  // namespace

bool is_gpu_class(std::uint32_t class_code) {
  const std::uint32_t base_sub = class_code >> 8;
  return base_sub == 0x0300 || base_sub == 0x0302;
}

Result<std::uint32_t> parse_pci_hex(std::string_view text) {
  text = trim(text);
  if (!text.starts_with("0x")) {
    return fail(Error::parse(fmt::format("expected 0x..., got '{}'", detail::excerpt(text))));
  }
  auto v = parse_u64(text, 16);
  if (!v || *v > 0xffffffu) {
    return fail(Error::parse(fmt::format("bad hex id '{}'", detail::excerpt(text))));
  }
  return static_cast<std::uint32_t>(*v);
}

std::optional<double> parse_pci_link_speed(std::string_view text) {
  auto f = split_ws(trim(text));
  if (f.size() < 2 || f[1] != "GT/s") return std::nullopt;
  auto v = parse_double(f[0]);
  if (!v || *v <= 0) return std::nullopt;
  return v;
}

std::optional<int> pcie_generation(double gts) {
  constexpr double kRates[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i) {
    if (std::fabs(gts - kRates[i]) < 0.01) return i + 1;
  }
  return std::nullopt;
}

Result<PciScan> collect_nvidia_pci(const FileSystem& fs) {
  auto entries = fs.list_dir(kDevices);
  if (!entries) return fail(entries.error());
  std::sort(entries->begin(), entries->end());
  PciScan out;
  for (const std::string& bus_id : *entries) {
    const std::string dir = fmt::format("{}/{}", kDevices, bus_id);
    auto vendor = read_hex(fs, dir + "/vendor");
    if (!vendor || *vendor != kPciVendorNvidia) continue;
    auto class_code = read_hex(fs, dir + "/class");
    if (!class_code) continue;
    if (!is_gpu_class(*class_code)) {
      ++out.other_nvidia_functions;
      continue;
    }
    out.gpus.push_back(read_function(fs, bus_id, *vendor, *class_code));
  }
  return out;
}

bool passed_through_to_vm(const PciDevice& d) {
  return d.driver == "vfio-pci" || d.driver == "pci-stub";
}

}  // namespace cardiac::host
