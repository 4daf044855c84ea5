/* A C host, linked to libnoether only (no Lua): builds the double pendulum body by body, runs it
 * to a CSV with the kernel's run and reads the summary. Prints "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"
#include "noether.h"

int main(int argc, char** argv) {
    const char* csv = argc > 1 ? argv[1] : "c_run.csv";
    remove(csv);
    noether_spec* s = noether_spec_new();
    const double I[9] = {1.0 / 600, 0, 0, 0, 101.0 / 1200, 0, 0, 0, 101.0 / 1200}; /* 1 x 0.1 x 0.1 m box, 1 kg */
    const double p1[3] = {0.5, 0, 0}, p2[3] = {1.5, 0, 0}, o1[3] = {0, 0, 0}, o2[3] = {1, 0, 0}, y[3] = {0, 1, 0};
    CHECK(noether_spec_add_body(s, "upper", 1, I, p1, NULL) == NOETHER_OK);
    CHECK(noether_spec_add_body(s, "lower", 1, I, p2, NULL) == NOETHER_OK);
    CHECK(noether_spec_add_joint(s, "shoulder", "revolute", "world", "upper", o1, y) == NOETHER_OK);
    CHECK(noether_spec_add_joint(s, "elbow", "revolute", "upper", "lower", o2, y) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    CHECK(m != NULL);
    if (!m) return 1;
    noether_run* r = noether_run_new(m);
    CHECK(r != NULL);
    const char* channels[] = {"time", "energy", "violation", "shoulder.coord", "elbow.coord"};
    const char* bad[] = {"time", "knee.coord"};
    CHECK(noether_run_add_output(r, csv, 1, 2, bad) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "no joint named 'knee'") != NULL);
    CHECK(noether_run_add_output(r, csv, 1, 5, channels) == NOETHER_OK);
    CHECK(noether_run_duration(r, 5.0) == NOETHER_OK);
    CHECK(fabs(noether_time(noether_run_data(r)) - 5.0) < 1e-9);
    double energy[3], violation = 1;
    CHECK(noether_monitors(noether_run_data(r), energy, NULL, NULL, &violation) == NOETHER_OK);
    CHECK(fabs(energy[2]) < 0.37 && violation < 1e-12);
    CHECK(noether_run_finish(r) == NOETHER_OK);
    char* json = noether_run_summary_json(r);
    CHECK(json != NULL && strstr(json, "\"steps\": 500") != NULL && strstr(json, "\"failed\": false") != NULL);
    noether_free(json);
    /* the CSV: a header and 501 rows, the last at t = 5 */
    FILE* f = fopen(csv, "r");
    CHECK(f != NULL);
    int lines = 0;
    char line[512], last[512] = "";
    while (f && fgets(line, sizeof line, f)) {
        if (lines == 0) CHECK(strcmp(line, "time,energy,violation,shoulder.coord,elbow.coord\n") == 0);
        strcpy(last, line);
        ++lines;
    }
    if (f) fclose(f);
    CHECK(lines == 502);
    CHECK(fabs(atof(last) - 5.0) < 1e-9);
    noether_run_free(r);
    noether_model_free(m);
    noether_spec_free(s);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
