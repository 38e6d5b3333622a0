// SPDX-License-Identifier: Apache-2.0
// Library and system entry points: init/shutdown, error strings, versions, device enumeration.
#include "codes.h"
#include "exports.h"
#include "state.h"

using cardiac::nvml::ReturnCode;
using fake::Json;

namespace {

nvmlReturn_t system_string(fake::Call& call, const char* key, char* out, unsigned int length) {
  const Json& system = call.view().system;
  auto it = system.find(key);
  if (it == system.end()) return ReturnCode::kNotSupported;
  return fake::copy_string(it->get<std::string>(), out, length);
}

nvmlReturn_t cuda_driver_version(const char* function, int* version) {
  fake::Call call(function);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!version) return ReturnCode::kInvalidArgument;
  const Json& system = call.view().system;
  auto it = system.find("cuda_driver_version");
  if (it == system.end()) return ReturnCode::kNotSupported;
  *version = it->get<int>();
  return ReturnCode::kSuccess;
}

nvmlReturn_t device_count(const char* function, unsigned int* count) {
  fake::Call call(function);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!count) return ReturnCode::kInvalidArgument;
  *count = static_cast<unsigned int>(call.device_count());
  return ReturnCode::kSuccess;
}

nvmlReturn_t handle_by_index(const char* function, unsigned int index, nvmlDevice_t* device) {
  fake::Call call(function, index);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!device) return ReturnCode::kInvalidArgument;
  *device = fake::handle_of(index);
  return ReturnCode::kSuccess;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  return fake::init(__func__);
}
nvmlReturn_t nvmlInit(void) {
  return fake::init(__func__);
}

nvmlReturn_t nvmlShutdown(void) {
  fake::Call call(__func__);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  call.drop_reference();
  return ReturnCode::kSuccess;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  // Counted through a Call so tests see it, but usable before nvmlInit like the real one.
  fake::Call call(__func__);
  return fake::error_text(result);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  fake::Call call(__func__);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  return system_string(call, "driver_version", version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  fake::Call call(__func__);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  return system_string(call, "nvml_version", version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return cuda_driver_version(__func__, version);
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return cuda_driver_version(__func__, version);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return device_count(__func__, count);
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return device_count(__func__, count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(__func__, index, device);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(__func__, index, device);
}

}  // extern "C"
