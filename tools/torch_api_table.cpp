// Prints docs/torch_api.md: every torch callable of Kiln's binding table with
// its signatures. Run `build/tools/kiln-torch-api-table > docs/torch_api.md`
// after changing the table; test_torch_api fails until the file agrees.
#include <iostream>

#include "core/python/torch_api.h"

int main() {
  std::cout << kiln::torchapi::reference_markdown();
  return 0;
}
