package auditlake.serve;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.Pool;
import org.apache.spark.scheduler.Schedulable;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.TaskScheduler;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.CallMethodViaReflection;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.command.SetCommand;

import scala.Function1;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The analysts' server answers reads only (pipelines/analyst/server.py): a check rule, run by Spark's
 * analyzer on the analyzed plan of every statement of every session, whatever its spelling (case,
 * comments, a CTE, EXECUTE IMMEDIATE, a SQL script: each statement arrives here as a plan).
 *
 * <p>Allowed: plans without commands (queries), and the commands that only read: SHOW, DESCRIBE,
 * EXPLAIN, USE and SET without a value. Everything else is refused: a command to create, replace,
 * alter, drop, insert, cache, write a directory, add a JAR or function, set a setting. So are the
 * two ways a query reaches beyond the data: Java methods by reflection and script transforms.
 *
 * <p>It also holds each session to the server's own settings: the keys listed in {@code
 * spark.auditlake.serve.fixed} keep the values the server started with (a client can set any
 * setting when it opens a session, without a statement), and each session's jobs run in a FAIR
 * scheduler pool of its own, so that one analyst's statements queue behind each other, not others'.
 * Spark makes a pool on a job's first use of its name and never removes it, and its scheduler sorts
 * every pool at each round: the server removes the idle ones whenever a session closes ({@link
 * PoolSweeper}).
 *
 * <p>The one session the rule trusts is the server's own, which makes the views ({@link #trust}).
 */
public final class ReadOnlyExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    static final String FIXED_KEYS = "spark.auditlake.serve.fixed";
    static final String POOL_KEY = "spark.sql.thriftserver.scheduler.pool";
    static final String POOL_PROPERTY = "spark.scheduler.pool";

    /** Commands that change nothing, beyond those named Show... and Describe... */
    private static final Set<String> READ_COMMANDS = new HashSet<>(Arrays.asList(
        "ExplainCommand", "SetCatalogAndNamespace", "SetNamespaceCommand", "SetCatalogCommand"));
    /** Query parts that act outside the data: a shell command per row. */
    private static final Set<String> REFUSED_NODES = new HashSet<>(Arrays.asList(
        "ScriptTransformation", "InsertIntoDir", "InsertIntoStatement"));

    static final String POOL_PREFIX = "session-";
    private static final Logger LOG = LogManager.getLogger("auditlake.serve.pools");

    private static volatile SparkSession trusted;

    /** The server's own session: the only one that may write (its views). Set once, before serving. */
    public static synchronized void trust(SparkSession session) {
        if (trusted != null && trusted != session) {
            throw new IllegalStateException("auditlake: a trusted session is already set");
        }
        if (trusted == null) {
            session.sparkContext().addSparkListener(new PoolSweeper(session.sparkContext()));
        }
        trusted = session;
    }

    /**
     * Removes the sessions' pools that hold no task set, each time a Thrift session closes, so that the
     * pools do not grow with every session the server ever had. A pool's only state is its task sets
     * (its weight and minimum share are the defaults), so an idle pool of a session still open is
     * removed too and made again, the same, by that session's next job. The scheduler adds task sets
     * to pools, and pools to the root, holding its own lock: the sweep holds it too, so no pool is
     * removed between being found and being given a task set.
     */
    static final class PoolSweeper extends SparkListener {
        private static final String SESSION_CLOSED = "SparkListenerThriftServerSessionClosed";
        private final SparkContext context;

        PoolSweeper(SparkContext context) {
            this.context = context;
        }

        @Override
        public void onOtherEvent(SparkListenerEvent event) {
            // the Thrift server's own event class, matched by name: this class is compiled without its JAR
            if (SESSION_CLOSED.equals(event.getClass().getSimpleName())) {
                sweep();
            }
        }

        void sweep() {
            TaskScheduler scheduler = context.taskScheduler();
            if (scheduler == null) {
                return;
            }
            int removed = 0;
            int left = 0;
            synchronized (scheduler) {
                Pool root = scheduler.rootPool();
                for (Schedulable pool : root.schedulableQueue()) {
                    if (!pool.name().startsWith(POOL_PREFIX)) {
                        continue;
                    }
                    if (pool.schedulableQueue().isEmpty() && pool.runningTasks() == 0) {
                        root.removeSchedulable(pool);
                        removed++;
                    } else {
                        left++;
                    }
                }
            }
            if (removed > 0) {
                LOG.info("removed {} idle session scheduler pools; {} session pools left", removed, left);
            }
        }
    }

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectCheckRule(new AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>>() {
            @Override
            public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
                return new AbstractFunction1<LogicalPlan, BoxedUnit>() {
                    @Override
                    public BoxedUnit apply(LogicalPlan plan) {
                        check(session, plan);
                        return BoxedUnit.UNIT;
                    }
                };
            }
        });
        return BoxedUnit.UNIT;
    }

    static void check(SparkSession session, LogicalPlan plan) {
        if (session == trusted) {
            return;
        }
        holdSettings(session);
        walk(plan);
    }

    /** A session's own pool, and the server's values back wherever the session changed them. */
    private static void holdSettings(SparkSession session) {
        SparkContext context = session.sparkContext();
        String pool = POOL_PREFIX + Integer.toHexString(System.identityHashCode(session));
        context.setLocalProperty(POOL_PROPERTY, pool);
        if (!pool.equals(session.conf().get(POOL_KEY, null))) {
            session.conf().set(POOL_KEY, pool);
        }
        String fixed = context.getConf().get(FIXED_KEYS, "");
        for (String key : fixed.split(",")) {
            if (key.isEmpty()) {
                continue;
            }
            String server = context.getConf().get(key, null);
            String own = session.conf().get(key, null);
            if (server != null && !server.equals(own)) {
                session.conf().set(key, server);
                refuse("the setting " + key + " is the server's (" + server + "); it is back: run the statement again");
            }
        }
    }

    private static void walk(LogicalPlan plan) {
        String name = plan.getClass().getSimpleName();
        if (plan instanceof Command) {
            if (!readCommand(plan, name)) {
                refuse(name.replaceAll("(Command|Exec)$", "") + " changes the server's state");
            }
            return;  // an allowed command's inner plan (EXPLAIN's, DESCRIBE QUERY's) is described, never run
        }
        if (REFUSED_NODES.contains(name)) {
            refuse(name + " acts outside the data");
        }
        for (Expression expression : CollectionConverters.asJava(plan.expressions())) {
            walk(expression);
        }
        for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
            walk(child);
        }
    }

    private static void walk(Expression expression) {
        if (expression instanceof CallMethodViaReflection) {
            refuse("reflect/java_method call Java methods");
        }
        if (expression instanceof SubqueryExpression) {
            walk(((SubqueryExpression) expression).plan());
        }
        for (Expression child : CollectionConverters.asJava(expression.children())) {
            walk(child);
        }
    }

    private static boolean readCommand(LogicalPlan plan, String name) {
        if (name.startsWith("Show") || name.startsWith("Describe") || READ_COMMANDS.contains(name)) {
            return true;
        }
        if (plan instanceof SetCommand) {  // SET and SET key list; SET key=value changes a setting
            Option<Tuple2<String, Option<String>>> kv = ((SetCommand) plan).kv();
            return kv.isEmpty() || kv.get()._2().isEmpty();
        }
        return false;
    }

    private static void refuse(String why) {
        throw new ReadOnlyViolation("refused: the analysts' server is read-only: " + why);
    }

    /** What the analyst sees, after the server's "Error running query: ". */
    public static final class ReadOnlyViolation extends SecurityException {
        ReadOnlyViolation(String message) {
            super(message);
        }

        /** The message alone: the server quotes this after "Error running query: ". */
        @Override
        public String toString() {
            return getMessage();
        }
    }
}
