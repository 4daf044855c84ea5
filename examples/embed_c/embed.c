/* A C host of noether (docs/c_api.md): it loads a Lua scene, steps it in its own loop with its own
 * controller, records it for the viewer and reads the results; then it imports a URDF robot, pushes
 * on it and checks a save/restore round trip.
 *
 *   embed_c SCENE.lua [ROBOT.urdf [OUT_DIR]]
 *
 * SCENE is the double pendulum (scripts/examples/double_pendulum.lua): the controller holds the
 * shoulder joint at 0.5 rad with a PD law while the elbow swings. Exit status 0 when every check
 * passes ("embed_c: ok"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noether.h"
#include "noether_lua.h"
#include "noether_urdf.h"

static int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      ++failures;                                         \
      printf("embed_c: FAILED %s: ", #cond);              \
      printf(__VA_ARGS__);                                \
      printf(" (%s)\n", noether_last_error());            \
    }                                                     \
  } while (0)

static int pendulum(const char* scene, const char* out_dir) {
  /* A script that cannot load: the message names the file. */
  noether_run* bad = noether_script_load("no_such_scene.lua", 0, NULL, 0);
  CHECK(bad == NULL && strstr(noether_script_error(), "no_such_scene.lua"), "a missing scene is an error naming it");

  const char* set[] = {"dt=0.005"};
  noether_run* run = noether_script_load(scene, 1, set, 0);
  if (!run) {
    printf("embed_c: cannot load %s: %s\n", scene, noether_script_error());
    return 1;
  }
  const noether_model* m = noether_run_model(run);
  noether_data* d = noether_run_data(run);
  char rec[1024];
  snprintf(rec, sizeof rec, "%s/embed_c.nrec", out_dir);
  CHECK(noether_run_add_recording(run, rec, 30) == NOETHER_OK, "recording");

  const int shoulder = noether_joint_index(m, "j1");
  int offset = -1;
  CHECK(shoulder >= 0 && noether_joint_dofs(m, shoulder, &offset) == 1, "j1 is a 1-DOF joint");
  printf("embed_c: %s: %d bodies (%s, %s), %d joints, dt %g s\n", scene, noether_nbodies(m), noether_body_name(m, 0),
         noether_body_name(m, 1), noether_njoints(m), noether_dt(m));

  /* The host's loop: read the joint state, set the shoulder torque, step. */
  const int n = noether_ndofs(m);
  double q[16], qd[16];
  const double target = 0.5, kp = 200.0, kd = 20.0;
  for (int k = 0; k < 800; ++k) { /* 4 s */
    noether_joint_state(d, q, qd);
    const double u = kp * (target - q[offset]) - kd * qd[offset];
    if (noether_set_actuation(d, shoulder, &u, 1) != NOETHER_OK) return 1;
    if (noether_run_steps(run, 1) != NOETHER_OK) {
      printf("embed_c: step failed: %s\n", noether_last_error());
      return 1;
    }
  }
  noether_joint_state(d, q, qd);
  double energy[3], p[3], L[3], violation = 0;
  noether_monitors(d, energy, p, L, &violation);
  printf("embed_c: t = %.3f s, shoulder %.4f rad (target %.1f), elbow %.4f rad, energy %.6f J, violation %.2e\n",
         noether_time(d), q[offset], target, q[1 - offset], energy[2], violation);
  CHECK(n == 2, "two coordinates");
  /* The gravity torque on the held shoulder leaves a steady offset of about m g l / kp. */
  CHECK(fabs(q[offset] - target) < 0.15, "the controller holds the shoulder near the target: %.4f", q[offset]);
  CHECK(violation < 1e-12, "the joints hold together: %.2e", violation);
  double pos[3], quat[4], v[3], w[3];
  CHECK(noether_body_pose(d, 1, pos, quat) == NOETHER_OK && noether_body_velocity(d, 1, v, w) == NOETHER_OK, "state");
  CHECK(fabs(w[0]) < 1e-12 && fabs(w[2]) < 1e-12, "planar motion: the angular velocity is along y");

  CHECK(noether_run_finish(run) == NOETHER_OK, "outputs closed");
  char* json = noether_run_summary_json(run);
  CHECK(json && strstr(json, "\"steps\": 800"), "summary");
  if (json) printf("embed_c: summary %.120s...\n", json);
  noether_free(json);
  noether_run_free(run);
  return 0;
}

static int robot(const char* urdf) {
  noether_spec* s = noether_spec_new();
  noether_spec_set_options(s, "vi-maximal", "auto", 0.005);
  CHECK(noether_spec_import_urdf(s, "no_such_robot.urdf", 1, NULL) == NOETHER_BAD_INPUT &&
            strstr(noether_last_error(), "no_such_robot.urdf"),
        "a missing URDF is an error naming it");
  if (noether_spec_import_urdf(s, urdf, 1, "ur5/") != NOETHER_OK) {
    printf("embed_c: cannot import %s: %s\n", urdf, noether_last_error());
    noether_spec_free(s);
    return 1;
  }
  noether_model* m = noether_compile(s);
  noether_spec_free(s);
  if (!m) {
    printf("embed_c: compile failed: %s\n", noether_last_error());
    return 1;
  }
  noether_data* d = noether_data_new(m);
  const int tool = noether_nbodies(m) - 1;
  printf("embed_c: %s: %d bodies, %d joints, last body %s\n", urdf, noether_nbodies(m), noether_njoints(m),
         noether_body_name(m, tool));
  const double push[3] = {0, 0, 20};
  CHECK(noether_set_body_force(d, tool, push, NULL) == NOETHER_OK, "a force on the last body");
  for (int k = 0; k < 20; ++k) CHECK(noether_step(d) == NOETHER_OK, "step %d", k);
  /* Save, go on, restore, go on again: the same poses bit for bit. */
  char* bytes = NULL;
  size_t nbytes = 0;
  CHECK(noether_save(d, &bytes, &nbytes) == NOETHER_OK && nbytes > 0, "save");
  double a[3], b[3], qa[4], qb[4];
  for (int k = 0; k < 20; ++k) noether_step(d);
  noether_body_pose(d, tool, a, qa);
  CHECK(noether_restore(d, bytes, nbytes) == NOETHER_OK, "restore");
  for (int k = 0; k < 20; ++k) noether_step(d);
  noether_body_pose(d, tool, b, qb);
  CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(qa, qb, sizeof qa) == 0, "restore is bit-identical");
  CHECK(noether_restore(d, bytes, nbytes / 2) == NOETHER_BAD_INPUT, "a truncated state is refused");
  noether_free(bytes);
  printf("embed_c: %s at t = %.3f s: tool at (%.4f, %.4f, %.4f)\n", noether_body_name(m, tool), noether_time(d), b[0], b[1], b[2]);
  noether_data_free(d);
  noether_model_free(m);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: embed_c SCENE.lua [ROBOT.urdf [OUT_DIR]]\n");
    return 2;
  }
  const char* out_dir = argc > 3 ? argv[3] : ".";
  if (pendulum(argv[1], out_dir) != 0) return 1;
  if (argc > 2) {
    FILE* f = fopen(argv[2], "r");
    if (!f) printf("embed_c: %s not found: the robot part is skipped\n", argv[2]);
    else {
      fclose(f);
      if (robot(argv[2]) != 0) return 1;
    }
  }
  if (failures) {
    printf("embed_c: %d check(s) failed\n", failures);
    return 1;
  }
  printf("embed_c: ok (noether %s)\n", noether_version());
  return 0;
}
