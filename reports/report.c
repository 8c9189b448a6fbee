#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "afile.h"
#include "evidence.h"
#include "junit.h"

const report_phase *report_phase_for_probe(const report_input *in, const char *label)
{
    for (size_t i = 0; label && i < in->nphases; i++)
        if (in->phases[i].probe_label && strcmp(in->phases[i].probe_label, label) == 0)
            return &in->phases[i];
    return NULL;
}

const report_phase *report_phase_named(const report_input *in, const char *name)
{
    for (size_t i = 0; name && i < in->nphases; i++)
        if (in->phases[i].name && strcmp(in->phases[i].name, name) == 0)
            return &in->phases[i];
    return NULL;
}

err_code report_write(const report_input *in, const char *dir, char *err)
{
    if (!in || !in->st || !dir)
        return err_set(err, ERR_USAGE, "report_write needs a state and a folder");
    char *md = evidence_render(in);
    char *xml = junit_render(in);
    err_code rc = ERR_OK;
    if (!md || !xml)
        rc = err_set(err, ERR_NOMEM, "out of memory rendering the reports");
    if (rc == ERR_OK)
        rc = afile_replace(dir, REPORT_EVIDENCE_FILE, md, 0600, err);
    if (rc == ERR_OK)
        rc = afile_replace(dir, REPORT_JUNIT_FILE, xml, 0600, err);
    free(md);
    free(xml);
    return rc;
}
