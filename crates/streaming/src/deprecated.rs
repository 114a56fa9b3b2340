//! Hadoop's deprecated configuration key names, and the current name each stands for.
//!
//! Hadoop 3 still reads the Hadoop 1 names (`mapred.reduce.tasks`, `io.sort.mb`...): a key
//! given under an old name is the same setting as under its current name. What a streaming
//! program's environment has differs by where the value comes from, which is why the job
//! configuration ([`crate::conf::JobConf`]) keeps every key under its current name and adds
//! an old name only where Hadoop's task has one.
//!
//! [`DEPRECATED`] is the table Hadoop 3.4's `JobConf` registers (what
//! `Configuration.dumpDeprecatedKeys()` prints once `JobConf` is loaded), sorted by old name;
//! a test that runs Hadoop checks the two are the same.

/// Every old key name a streaming job's configuration understands, with its current name.
/// Two old names may stand for one current name; no old name stands for two.
#[rustfmt::skip]
pub const DEPRECATED: &[(&str, &str)] = &[
    ("create.empty.dir.if.nonexist", "mapreduce.jobcontrol.createdir.ifnotexist"),
    ("dfs.df.interval", "fs.df.interval"),
    ("dfs.nfs.exports.allowed.hosts", "nfs.exports.allowed.hosts"),
    ("dfs.umaskmode", "fs.permissions.umask-mode"),
    ("fs.default.name", "fs.defaultFS"),
    ("hadoop.configured.node.mapping", "net.topology.configured.node.mapping"),
    ("hadoop.pipes.command-file.keep", "mapreduce.pipes.commandfile.preserve"),
    ("hadoop.pipes.executable", "mapreduce.pipes.executable"),
    ("hadoop.pipes.executable.interpretor", "mapreduce.pipes.executable.interpretor"),
    ("hadoop.pipes.java.mapper", "mapreduce.pipes.isjavamapper"),
    ("hadoop.pipes.java.recordreader", "mapreduce.pipes.isjavarecordreader"),
    ("hadoop.pipes.java.recordwriter", "mapreduce.pipes.isjavarecordwriter"),
    ("hadoop.pipes.java.reducer", "mapreduce.pipes.isjavareducer"),
    ("hadoop.pipes.partitioner", "mapreduce.pipes.partitioner"),
    ("io.sort.factor", "mapreduce.task.io.sort.factor"),
    ("io.sort.mb", "mapreduce.task.io.sort.mb"),
    ("io.sort.spill.percent", "mapreduce.map.sort.spill.percent"),
    ("job.end.notification.url", "mapreduce.job.end-notification.url"),
    ("job.end.retry.attempts", "mapreduce.job.end-notification.retry.attempts"),
    ("job.end.retry.interval", "mapreduce.job.end-notification.retry.interval"),
    ("job.local.dir", "mapreduce.job.local.dir"),
    ("jobclient.completion.poll.interval", "mapreduce.client.completion.pollinterval"),
    ("jobclient.output.filter", "mapreduce.client.output.filter"),
    ("jobclient.progress.monitor.poll.interval", "mapreduce.client.progressmonitor.pollinterval"),
    ("keep.failed.task.files", "mapreduce.task.files.preserve.failedtasks"),
    ("keep.task.files.pattern", "mapreduce.task.files.preserve.filepattern"),
    ("key.value.separator.in.input.line", "mapreduce.input.keyvaluelinerecordreader.key.value.separator"),
    ("map.input.file", "mapreduce.map.input.file"),
    ("map.input.length", "mapreduce.map.input.length"),
    ("map.input.start", "mapreduce.map.input.start"),
    ("map.output.key.field.separator", "mapreduce.map.output.key.field.separator"),
    ("map.output.key.value.fields.spec", "mapreduce.fieldsel.map.output.key.value.fields.spec"),
    ("mapred.acls.enabled", "mapreduce.cluster.acls.enabled"),
    ("mapred.binary.partitioner.left.offset", "mapreduce.partition.binarypartitioner.left.offset"),
    ("mapred.binary.partitioner.right.offset", "mapreduce.partition.binarypartitioner.right.offset"),
    ("mapred.cache.archives", "mapreduce.job.cache.archives"),
    ("mapred.cache.archives.filesizes", "mapreduce.job.cache.archives.filesizes"),
    ("mapred.cache.archives.timestamps", "mapreduce.job.cache.archives.timestamps"),
    ("mapred.cache.files", "mapreduce.job.cache.files"),
    ("mapred.cache.files.filesizes", "mapreduce.job.cache.files.filesizes"),
    ("mapred.cache.files.timestamps", "mapreduce.job.cache.files.timestamps"),
    ("mapred.cache.localArchives", "mapreduce.job.cache.local.archives"),
    ("mapred.cache.localFiles", "mapreduce.job.cache.local.files"),
    ("mapred.cluster.map.memory.mb", "mapreduce.cluster.mapmemory.mb"),
    ("mapred.cluster.max.map.memory.mb", "mapreduce.jobtracker.maxmapmemory.mb"),
    ("mapred.cluster.max.reduce.memory.mb", "mapreduce.jobtracker.maxreducememory.mb"),
    ("mapred.cluster.reduce.memory.mb", "mapreduce.cluster.reducememory.mb"),
    ("mapred.committer.job.setup.cleanup.needed", "mapreduce.job.committer.setup.cleanup.needed"),
    ("mapred.compress.map.output", "mapreduce.map.output.compress"),
    ("mapred.data.field.separator", "mapreduce.fieldsel.data.field.separator"),
    ("mapred.debug.out.lines", "mapreduce.task.debugout.lines"),
    ("mapred.inmem.merge.threshold", "mapreduce.reduce.merge.inmem.threshold"),
    ("mapred.input.dir", "mapreduce.input.fileinputformat.inputdir"),
    ("mapred.input.dir.formats", "mapreduce.input.multipleinputs.dir.formats"),
    ("mapred.input.dir.mappers", "mapreduce.input.multipleinputs.dir.mappers"),
    ("mapred.input.dir.recursive", "mapreduce.input.fileinputformat.input.dir.recursive"),
    ("mapred.input.pathFilter.class", "mapreduce.input.pathFilter.class"),
    ("mapred.jar", "mapreduce.job.jar"),
    ("mapred.job.classpath.archives", "mapreduce.job.classpath.archives"),
    ("mapred.job.classpath.files", "mapreduce.job.classpath.files"),
    ("mapred.job.id", "mapreduce.job.id"),
    ("mapred.job.map.memory.mb", "mapreduce.map.memory.mb"),
    ("mapred.job.name", "mapreduce.job.name"),
    ("mapred.job.priority", "mapreduce.job.priority"),
    ("mapred.job.queue.name", "mapreduce.job.queuename"),
    ("mapred.job.reduce.input.buffer.percent", "mapreduce.reduce.input.buffer.percent"),
    ("mapred.job.reduce.markreset.buffer.percent", "mapreduce.reduce.markreset.buffer.percent"),
    ("mapred.job.reduce.memory.mb", "mapreduce.reduce.memory.mb"),
    ("mapred.job.reduce.total.mem.bytes", "mapreduce.reduce.memory.totalbytes"),
    ("mapred.job.reuse.jvm.num.tasks", "mapreduce.job.jvm.numtasks"),
    ("mapred.job.shuffle.input.buffer.percent", "mapreduce.reduce.shuffle.input.buffer.percent"),
    ("mapred.job.shuffle.merge.percent", "mapreduce.reduce.shuffle.merge.percent"),
    ("mapred.job.tracker", "mapreduce.jobtracker.address"),
    ("mapred.job.tracker.persist.jobstatus.active", "mapreduce.jobtracker.persist.jobstatus.active"),
    ("mapred.job.tracker.retire.jobs", "mapreduce.jobtracker.retirejobs"),
    ("mapred.join.expr", "mapreduce.join.expr"),
    ("mapred.join.keycomparator", "mapreduce.join.keycomparator"),
    ("mapred.lazy.output.format", "mapreduce.output.lazyoutputformat.outputformat"),
    ("mapred.line.input.format.linespermap", "mapreduce.input.lineinputformat.linespermap"),
    ("mapred.linerecordreader.maxlength", "mapreduce.input.linerecordreader.line.maxlength"),
    ("mapred.local.dir", "mapreduce.cluster.local.dir"),
    ("mapred.map.child.env", "mapreduce.map.env"),
    ("mapred.map.child.java.opts", "mapreduce.map.java.opts"),
    ("mapred.map.child.log.level", "mapreduce.map.log.level"),
    ("mapred.map.max.attempts", "mapreduce.map.maxattempts"),
    ("mapred.map.output.compression.codec", "mapreduce.map.output.compress.codec"),
    ("mapred.map.task.debug.script", "mapreduce.map.debug.script"),
    ("mapred.map.tasks", "mapreduce.job.maps"),
    ("mapred.map.tasks.speculative.execution", "mapreduce.map.speculative"),
    ("mapred.mapoutput.key.class", "mapreduce.map.output.key.class"),
    ("mapred.mapoutput.value.class", "mapreduce.map.output.value.class"),
    ("mapred.mapper.regex", "mapreduce.mapper.regex"),
    ("mapred.mapper.regex.group", "mapreduce.mapper.regexmapper..group"),
    ("mapred.max.map.failures.percent", "mapreduce.map.failures.maxpercent"),
    ("mapred.max.reduce.failures.percent", "mapreduce.reduce.failures.maxpercent"),
    ("mapred.max.split.size", "mapreduce.input.fileinputformat.split.maxsize"),
    ("mapred.max.tracker.failures", "mapreduce.job.maxtaskfailures.per.tracker"),
    ("mapred.merge.recordsBeforeProgress", "mapreduce.task.merge.progress.records"),
    ("mapred.min.split.size", "mapreduce.input.fileinputformat.split.minsize"),
    ("mapred.min.split.size.per.node", "mapreduce.input.fileinputformat.split.minsize.per.node"),
    ("mapred.min.split.size.per.rack", "mapreduce.input.fileinputformat.split.minsize.per.rack"),
    ("mapred.output.compress", "mapreduce.output.fileoutputformat.compress"),
    ("mapred.output.compression.codec", "mapreduce.output.fileoutputformat.compress.codec"),
    ("mapred.output.compression.type", "mapreduce.output.fileoutputformat.compress.type"),
    ("mapred.output.dir", "mapreduce.output.fileoutputformat.outputdir"),
    ("mapred.output.key.class", "mapreduce.job.output.key.class"),
    ("mapred.output.key.comparator.class", "mapreduce.job.output.key.comparator.class"),
    ("mapred.output.value.class", "mapreduce.job.output.value.class"),
    ("mapred.output.value.groupfn.class", "mapreduce.job.output.group.comparator.class"),
    ("mapred.permissions.supergroup", "mapreduce.cluster.permissions.supergroup"),
    ("mapred.pipes.user.inputformat", "mapreduce.pipes.inputformat"),
    ("mapred.reduce.child.env", "mapreduce.reduce.env"),
    ("mapred.reduce.child.java.opts", "mapreduce.reduce.java.opts"),
    ("mapred.reduce.child.log.level", "mapreduce.reduce.log.level"),
    ("mapred.reduce.max.attempts", "mapreduce.reduce.maxattempts"),
    ("mapred.reduce.parallel.copies", "mapreduce.reduce.shuffle.parallelcopies"),
    ("mapred.reduce.slowstart.completed.maps", "mapreduce.job.reduce.slowstart.completedmaps"),
    ("mapred.reduce.task.debug.script", "mapreduce.reduce.debug.script"),
    ("mapred.reduce.tasks", "mapreduce.job.reduces"),
    ("mapred.reduce.tasks.speculative.execution", "mapreduce.reduce.speculative"),
    ("mapred.seqbinary.output.key.class", "mapreduce.output.seqbinaryoutputformat.key.class"),
    ("mapred.seqbinary.output.value.class", "mapreduce.output.seqbinaryoutputformat.value.class"),
    ("mapred.shuffle.connect.timeout", "mapreduce.reduce.shuffle.connect.timeout"),
    ("mapred.shuffle.read.timeout", "mapreduce.reduce.shuffle.read.timeout"),
    ("mapred.skip.attempts.to.start.skipping", "mapreduce.task.skip.start.attempts"),
    ("mapred.skip.map.auto.incr.proc.count", "mapreduce.map.skip.proc-count.auto-incr"),
    ("mapred.skip.map.max.skip.records", "mapreduce.map.skip.maxrecords"),
    ("mapred.skip.on", "mapreduce.job.skiprecords"),
    ("mapred.skip.out.dir", "mapreduce.job.skip.outdir"),
    ("mapred.skip.reduce.auto.incr.proc.count", "mapreduce.reduce.skip.proc-count.auto-incr"),
    ("mapred.skip.reduce.max.skip.groups", "mapreduce.reduce.skip.maxgroups"),
    ("mapred.speculative.execution.slowTaskThreshold", "mapreduce.job.speculative.slowtaskthreshold"),
    ("mapred.speculative.execution.speculativeCap", "mapreduce.job.speculative.speculative-cap-running-tasks"),
    ("mapred.submit.replication", "mapreduce.client.submit.file.replication"),
    ("mapred.system.dir", "mapreduce.jobtracker.system.dir"),
    ("mapred.task.cache.levels", "mapreduce.jobtracker.taskcache.levels"),
    ("mapred.task.id", "mapreduce.task.attempt.id"),
    ("mapred.task.is.map", "mapreduce.task.ismap"),
    ("mapred.task.partition", "mapreduce.task.partition"),
    ("mapred.task.profile", "mapreduce.task.profile"),
    ("mapred.task.profile.maps", "mapreduce.task.profile.maps"),
    ("mapred.task.profile.params", "mapreduce.task.profile.params"),
    ("mapred.task.profile.reduces", "mapreduce.task.profile.reduces"),
    ("mapred.task.timeout", "mapreduce.task.timeout"),
    ("mapred.tasktracker.indexcache.mb", "mapreduce.reduce.shuffle.indexcache.mb"),
    ("mapred.tasktracker.map.tasks.maximum", "mapreduce.tasktracker.map.tasks.maximum"),
    ("mapred.tasktracker.memory_calculator_plugin", "mapreduce.tasktracker.resourcecalculatorplugin"),
    ("mapred.tasktracker.memorycalculatorplugin", "mapreduce.tasktracker.resourcecalculatorplugin"),
    ("mapred.temp.dir", "mapreduce.cluster.temp.dir"),
    ("mapred.text.key.comparator.options", "mapreduce.partition.keycomparator.options"),
    ("mapred.text.key.partitioner.options", "mapreduce.partition.keypartitioner.options"),
    ("mapred.textoutputformat.separator", "mapreduce.output.textoutputformat.separator"),
    ("mapred.tip.id", "mapreduce.task.id"),
    ("mapred.used.genericoptionsparser", "mapreduce.client.genericoptionsparser.used"),
    ("mapred.userlog.limit.kb", "mapreduce.task.userlog.limit.kb"),
    ("mapred.work.output.dir", "mapreduce.task.output.dir"),
    ("mapred.working.dir", "mapreduce.job.working.dir"),
    ("mapreduce.combine.class", "mapreduce.job.combine.class"),
    ("mapreduce.inputformat.class", "mapreduce.job.inputformat.class"),
    ("mapreduce.job.counters.limit", "mapreduce.job.counters.max"),
    ("mapreduce.map.class", "mapreduce.job.map.class"),
    ("mapreduce.outputformat.class", "mapreduce.job.outputformat.class"),
    ("mapreduce.partitioner.class", "mapreduce.job.partitioner.class"),
    ("mapreduce.reduce.class", "mapreduce.job.reduce.class"),
    ("mapreduce.tasktracker.indexcache.mb", "mapreduce.reduce.shuffle.indexcache.mb"),
    ("mapreduce.user.classpath.first", "mapreduce.job.user.classpath.first"),
    ("min.num.spills.for.combine", "mapreduce.map.combine.minspills"),
    ("reduce.output.key.value.fields.spec", "mapreduce.fieldsel.reduce.output.key.value.fields.spec"),
    ("security.job.submission.protocol.acl", "security.job.client.protocol.acl"),
    ("security.task.umbilical.protocol.acl", "security.job.task.protocol.acl"),
    ("sequencefile.filter.class", "mapreduce.input.sequencefileinputfilter.class"),
    ("sequencefile.filter.frequency", "mapreduce.input.sequencefileinputfilter.frequency"),
    ("sequencefile.filter.regex", "mapreduce.input.sequencefileinputfilter.regex"),
    ("topology.node.switch.mapping.impl", "net.topology.node.switch.mapping.impl"),
    ("topology.script.file.name", "net.topology.script.file.name"),
    ("topology.script.number.args", "net.topology.script.number.args"),
    ("user.name", "mapreduce.job.user.name"),
    ("yarn.app.mapreduce.yarn.app.mapreduce.client-am.ipc.max-retries-on-timeouts", "yarn.app.mapreduce.client-am.ipc.max-retries-on-timeouts"),
];

/// The current name of `key` (itself if it is not a deprecated name).
pub fn current_name(key: &str) -> &str {
    match DEPRECATED.binary_search_by(|(old, _)| (*old).cmp(key)) {
        Ok(at) => DEPRECATED[at].1,
        Err(_) => key,
    }
}

/// The deprecated name of a current key, if it has one (the first in [`DEPRECATED`]'s order
/// when it has two).
pub fn deprecated_alias(key: &str) -> Option<&'static str> {
    DEPRECATED
        .iter()
        .find(|(_, new)| *new == key)
        .map(|(old, _)| *old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_names_each_old_key_once() {
        for pair in DEPRECATED.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{:?} before {:?}", pair[0], pair[1]);
        }
    }

    #[test]
    fn old_names_lead_to_current_ones_and_back() {
        assert_eq!(current_name("mapred.reduce.tasks"), "mapreduce.job.reduces");
        assert_eq!(current_name("io.sort.mb"), "mapreduce.task.io.sort.mb");
        assert_eq!(current_name("fs.default.name"), "fs.defaultFS");
        assert_eq!(
            current_name("mapreduce.job.reduces"),
            "mapreduce.job.reduces"
        );
        assert_eq!(current_name("my.own.key"), "my.own.key");
        assert_eq!(
            deprecated_alias("mapreduce.task.partition"),
            Some("mapred.task.partition")
        );
        assert_eq!(deprecated_alias("my.own.key"), None);
        // No current name is itself an old one: one lookup is enough.
        for (_, new) in DEPRECATED {
            assert_eq!(current_name(new), *new, "{new}");
        }
    }
}
