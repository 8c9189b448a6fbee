/* libFuzzer: the `sbx ls --json` and `sbx version` parsers survive any output
 * a future sbx prints (banners, partial JSON, odd shapes). */
#include <stdint.h>

#include "sbx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[ERR_BUFSZ], version[SBX_VERSION_SZ];
    sbx_list list;
    if (sbx_parse_ls((const char *)data, size, &list, err) == ERR_OK)
        sbx_list_free(&list);
    sbx_parse_version((const char *)data, size, version, err);
    return 0;
}
