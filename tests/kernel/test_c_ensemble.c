/* A C host runs an ensemble: per-member masses through noether_model_vary, a C controller, two
 * thread counts with equal hashes, each member equal to a lone run, a member failed by its
 * controller while the others go on, and the host's own thread pool (pthreads) running the
 * members instead of oneTBB, bit for bit alike. Prints "N passed, N failed". */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"
#include "noether.h"

enum { K = 8, STEPS = 150 };

/* A damping torque on the shoulder with a member-dependent gain; member 5 gives up at step 40. */
static int controller(void* user, int member, noether_data* d) {
    const int* give_up = (const int*)user;
    double pose[3], q[4];
    noether_body_pose(d, 0, pose, q);
    const double u = -(0.2 + 0.1 * member) * pose[2];
    noether_set_actuation(d, 0, &u, 1);
    if (*give_up && member == 5 && noether_time(d) > 0.395) return 7;
    return 0;
}

/* The host's thread pool: three pthreads take member indices from a shared counter. */
struct Pool {
    int calls;   /* how often noether called the pool */
    int n, next; /* this call's members and the next one to take */
    void (*work)(void*, int);
    void* ctx;
    pthread_mutex_t mu;
    int ran[64]; /* which thread ran each member */
};
struct Worker {
    struct Pool* pool;
    int id;
};
static void* pool_worker(void* arg) {
    struct Worker* w = (struct Worker*)arg;
    for (;;) {
        pthread_mutex_lock(&w->pool->mu);
        const int i = w->pool->next < w->pool->n ? w->pool->next++ : -1;
        pthread_mutex_unlock(&w->pool->mu);
        if (i < 0) return NULL;
        w->pool->work(w->pool->ctx, i);
        if (i < 64) w->pool->ran[i] = w->id;
    }
}
static void pool_parallel_for(void* user, int n, void (*work)(void* ctx, int i), void* ctx) {
    struct Pool* pool = (struct Pool*)user;
    ++pool->calls;
    pool->n = n;
    pool->next = 0;
    pool->work = work;
    pool->ctx = ctx;
    pthread_t t[3];
    struct Worker w[3];
    for (int k = 0; k < 3; ++k) {
        w[k].pool = pool;
        w[k].id = k + 1;
        pthread_create(&t[k], NULL, pool_worker, &w[k]);
    }
    for (int k = 0; k < 3; ++k) pthread_join(t[k], NULL);
}

int main(void) {
    noether_spec* s = noether_spec_new();
    const double I[9] = {1.0 / 600, 0, 0, 0, 101.0 / 1200, 0, 0, 0, 101.0 / 1200};
    const double p1[3] = {0.5, 0, 0}, p2[3] = {1.5, 0, 0}, o1[3] = {0, 0, 0}, o2[3] = {1, 0, 0}, y[3] = {0, 1, 0};
    noether_spec_add_body(s, "upper", 1, I, p1, NULL);
    noether_spec_add_body(s, "lower", 1, I, p2, NULL);
    noether_spec_add_joint(s, "shoulder", "revolute", "world", "upper", o1, y);
    noether_spec_add_joint(s, "elbow", "revolute", "upper", "lower", o2, y);
    noether_model* m = noether_compile(s);
    CHECK(m != NULL);
    if (!m) return 1;

    /* Per-member models: another mass for the lower link (and a bad one, refused with a message). */
    noether_model* models[K];
    for (int i = 0; i < K; ++i) {
        const double mass = 1.0 + 0.25 * i;
        models[i] = noether_model_vary(m, "lower.mass", &mass, 1);
        CHECK(models[i] != NULL);
    }
    const double neg = -1;
    CHECK(noether_model_vary(m, "lower.mass", &neg, 1) == NULL);
    CHECK(strstr(noether_last_error(), "body 'lower': mass must be positive and finite, got -1") != NULL);
    CHECK(noether_model_vary(m, "knee.damping", &neg, 1) == NULL);
    CHECK(strstr(noether_last_error(), "no joint named 'knee'") != NULL);

    unsigned long long hash[2];
    const int threads[2] = {1, 2};
    int no = 0;
    for (int t = 0; t < 2; ++t) {
        noether_ensemble* e = noether_ensemble_new(m, K);
        CHECK(e != NULL && noether_ensemble_size(e) == K);
        CHECK(noether_ensemble_set_threads(e, threads[t]) == NOETHER_OK);
        for (int i = 0; i < K; ++i) CHECK(noether_ensemble_set_model(e, i, models[i]) == NOETHER_OK);
        CHECK(noether_ensemble_set_controller(e, controller, &no) == NOETHER_OK);
        CHECK(noether_ensemble_steps(e, STEPS) == NOETHER_OK);
        hash[t] = noether_ensemble_hash(e);
        if (t == 1) {
            /* Member 3 alone: a run of its model with the same controller. */
            noether_run* r = noether_run_new(models[3]);
            noether_data* d = noether_run_data(r);
            for (int k = 0; k < STEPS; ++k) {
                controller(&no, 3, d);
                CHECK(noether_run_steps(r, 1) == NOETHER_OK);
            }
            double a[3], qa[4], b[3], qb[4];
            noether_body_pose(d, 1, a, qa);
            noether_body_pose(noether_ensemble_data(e, 3), 1, b, qb);
            CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(qa, qb, sizeof qa) == 0);
            noether_body_pose(noether_ensemble_data(e, 6), 1, b, qb);
            CHECK(memcmp(a, b, sizeof a) != 0); /* another mass moves otherwise */
            noether_run_free(r);
            char* json = noether_ensemble_summary_json(e, 3);
            CHECK(json && strstr(json, "\"steps\": 150") != NULL);
            noether_free(json);
        }
        noether_ensemble_free(e);
    }
    CHECK(hash[0] == hash[1]);

    /* The host's thread pool instead of oneTBB: the same members, bit for bit. */
    {
        struct Pool pool;
        memset(&pool, 0, sizeof pool);
        pthread_mutex_init(&pool.mu, NULL);
        noether_ensemble* e = noether_ensemble_new(m, K);
        for (int i = 0; i < K; ++i) CHECK(noether_ensemble_set_model(e, i, models[i]) == NOETHER_OK);
        CHECK(noether_ensemble_set_controller(e, controller, &no) == NOETHER_OK);
        CHECK(noether_ensemble_set_executor(e, pool_parallel_for, &pool) == NOETHER_OK);
        CHECK(noether_ensemble_steps(e, STEPS / 2) == NOETHER_OK);
        CHECK(noether_ensemble_steps(e, STEPS - STEPS / 2) == NOETHER_OK);
        CHECK(pool.calls == 2);
        int by_pool = 1;
        for (int i = 0; i < K; ++i) by_pool = by_pool && pool.ran[i] >= 1 && pool.ran[i] <= 3;
        CHECK(by_pool);
        CHECK(noether_ensemble_hash(e) == hash[0]);
        CHECK(noether_ensemble_set_executor(e, NULL, NULL) == NOETHER_OK); /* back to oneTBB */
        CHECK(noether_ensemble_set_executor(NULL, pool_parallel_for, &pool) == NOETHER_USAGE);
        noether_ensemble_free(e);
        pthread_mutex_destroy(&pool.mu);
    }

    /* A controller that gives up fails its member only. */
    int give_up = 1;
    noether_ensemble* e = noether_ensemble_new(m, K);
    noether_ensemble_set_controller(e, controller, &give_up);
    CHECK(noether_ensemble_steps(e, STEPS) == NOETHER_STEP_FAILED);
    CHECK(strstr(noether_last_error(), "member 5: the controller failed: the controller returned 7") != NULL);
    CHECK(noether_ensemble_failed(e, 5) == 1);
    CHECK(noether_ensemble_failed(e, 4) == 0);
    CHECK(noether_ensemble_failed(e, K) == -1);
    CHECK(fabs(noether_time(noether_ensemble_data(e, 5)) - 0.40) < 1e-9);
    CHECK(fabs(noether_time(noether_ensemble_data(e, 4)) - 1.50) < 1e-9);
    CHECK(noether_ensemble_set_threads(e, -2) == NOETHER_USAGE);
    noether_ensemble_free(e);

    for (int i = 0; i < K; ++i) noether_model_free(models[i]);
    noether_model_free(m);
    noether_spec_free(s);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
